"""The NCCL log captured on two NVLink-joined H200 GPUs (tests/hardware/run-h200.sh, part nccl) shows that the
variables the cuda_env role set reached NCCL in both scheduler processes, which the collection's service
(supervisord fallback there) started through the server's multiprocessing spawn children.

The fixtures (tests/hardware/fixtures/h200x2/) are the captured output: nccl-log.txt (NCCL_DEBUG=INFO lines of the
server's log), nccl.txt (each scheduler's NCCL_* environment) and facts-gpus.json (host_facts' GPU part). Runs
anywhere; re-capture with run-h200.sh on a two-GPU machine when nccl-vars.yml changes.
"""

import json
import os
import re

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "h200x2")


def read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_every_nccl_variable_of_the_cuda_env_role_reached_both_ranks():
    with open(os.path.join(HERE, "nccl-vars.yml")) as handle:
        wanted = yaml.safe_load(handle)["cuda_env_nccl"]
    log = read("nccl-log.txt")
    for name, value in wanted.items():
        ranks = set(re.findall(r"\[(\d)\] NCCL INFO %s set by environment to %s\b" % (name, re.escape(value)), log))
        assert ranks == {"0", "1"}, "%s=%s not taken from the environment by both ranks" % (name, value)
    # NVLink multicast stayed off (the inventory's service_environment).
    assert set(re.findall(r"\[(\d)\] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0", log)) == {"0", "1"}
    assert len(re.findall(r"NCCL all_reduce over 2 ranks: 3.0 \(expected 3.0\)", log)) == 2


def test_the_schedulers_had_the_variables_in_their_environment():
    lines = [line for line in read("nccl.txt").splitlines() if line.startswith("scheduler ")]
    assert len(lines) == 2
    for line in lines:
        assert "NCCL_PROTO=Simple" in line and "NCCL_ALGO=Ring" in line and "NCCL_NVLS_ENABLE=0" in line


def test_the_facts_saw_nvlink_and_the_defaults_kept_custom_all_reduce():
    facts = json.loads(read("facts-gpus.json"))
    assert facts["interconnect"] == "nvlink" and facts["gpu_count"] == 2
    assert facts["topology"] == {"GPU0": {"GPU1": "NV18"}, "GPU1": {"GPU0": "NV18"}}
    assert [gpu["mig_mode"] for gpu in facts["gpus"]] == ["Disabled", "Disabled"]
    assert "no all-reduce flag in the rendered service" in read("nccl.txt")
