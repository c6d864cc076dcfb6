"""The service and cutover pre-flights on GPU faults and SGLang --config files, run by ansible-playbook on localhost
with hand-made host facts (field cases C14, C16, C17, C18). Nothing on the host is changed: only pre-flights run."""

import json
import os
import subprocess
import sys

import pytest

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Service pre-flight
      ansible.builtin.import_role:
        name: inferops.sglang.{role}
        tasks_from: preflight
    - name: Report
      ansible.builtin.debug:
        msg: {report}
"""
SERVICE_REPORT = ("{{ {'settings': __service_plan.settings, 'gpus_needed': __service_plan.gpus_needed | int, 'port': __service_plan.port | int, "
                  "'args': __service_plan.server_args, 'port_wanted': __service_plan.port_wanted | int} }}")
BUS_IDS = ['00000000:%02X:00.0' % b for b in (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xBA, 0xCB, 0xDB)]


def host_facts(gpus=8, mig=False, lost=(), error=None, listeners=()):
    return {
        'init': {'system': 'other', 'pid1': 'sleep', 'systemd_booted': False, 'systemd_version': None},
        'python': {'executable': sys.executable, 'exists': True},
        'gpus': [{'index': i, 'pci_bus_id': BUS_IDS[i], 'mig_mode': 'Enabled' if mig else 'Disabled',
                  'mig_devices': []} for i in range(gpus)],
        'gpu_count': gpus, 'interconnect': 'pcie' if gpus > 1 else ('single' if gpus else 'none'),
        'lost_gpus': [{'pci_bus_id': b, 'error': 'Unknown Error', 'source': 'nvidia-smi'} for b in lost],
        'gpu_error': error, 'servers': [], 'strays': [], 'listeners': list(listeners),
    }


MISMATCH = {'kind': 'driver_library_mismatch', 'message': 'Failed to initialize NVML: Driver/library version mismatch',
            'rc': 18, 'nvml_library_version': '570.195', 'kernel_module_version': '570.172.08'}


def run_preflight(tmp_path, facts, server_args, config_text=None, role='service', **extra):
    """Run the role's pre-flight; return (rc, the Report task's msg or None, all output)."""
    model = tmp_path / 'model'
    model.mkdir(exist_ok=True)
    (model / 'config.json').write_text('{}')
    args = dict(server_args)
    args.setdefault('model-path', str(model))
    if config_text is not None:
        (tmp_path / 'server.yaml').write_text(config_text)
    variables = dict({
        'service_host_facts': facts, 'cutover_host_facts': facts, 'service_server_args': args,
        'service_working_directory': str(tmp_path), 'service_env_file': str(tmp_path / 'sglang.env'),
        'service_validate_args': False, 'service_min_free_disk_gib': 0, 'service_python': sys.executable,
    }, **extra)
    (tmp_path / 'vars.json').write_text(json.dumps(variables))
    report = SERVICE_REPORT if role == 'service' else "done"
    (tmp_path / 'play.yml').write_text(PLAYBOOK.format(role=role, report=json.dumps(report)))
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json', ANSIBLE_LOAD_CALLBACK_PLUGINS='1',
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='0',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='0')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                           str(tmp_path / 'play.yml'), '-e', '@' + str(tmp_path / 'vars.json')],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, check=False, env=env)
    data = json.loads(proc.stdout[proc.stdout.index('{'):])
    failed = None
    report_msg = None
    for task in data['plays'][0]['tasks']:
        result = task['hosts'].get('localhost', {})
        if result.get('failed'):
            failed = result.get('msg')
        if task['task']['name'] == 'Report':
            report_msg = result.get('msg')
    return proc.returncode, failed, report_msg


C14_YAML = 'host: 0.0.0.0\nport: 8000\ntp-size: 4\n'


def test_c14_settings_of_the_config_file_count(tmp_path):
    """C14: port 8000 and tp-size 4 from the YAML; the GPU check needs 4; no tp-size 8 is added."""
    rc, failed, report = run_preflight(tmp_path, host_facts(), {'config': 'server.yaml'}, C14_YAML)
    assert rc == 0, failed
    assert report['settings'] == {'host': '0.0.0.0', 'port': 8000, 'tp': 4, 'dp': 1, 'pp': 1}
    assert report['port'] == 8000 and report['port_wanted'] == 8000
    assert report['gpus_needed'] == 4
    assert 'tp-size' not in report['args'] and report['args']['disable-custom-all-reduce'] is True


def test_c14_the_port_check_uses_the_port_of_the_config_file(tmp_path):
    """C14: a foreign listener on 8000 (the YAML's port) is found; SGLang's default 30000 is not looked at."""
    listener = {'proto': 'tcp', 'host': '0.0.0.0', 'port': 8000, 'inode': 1, 'pid': 4242, 'process': 'nginx'}
    rc, failed, report = run_preflight(tmp_path, host_facts(listeners=[listener]),
                                       {'config': str(tmp_path / 'server.yaml')}, C14_YAML)
    assert rc != 0 and 'Port 8000 is held by nginx' in failed


def test_c14_variant_tensor_parallel_size_in_the_arguments(tmp_path):
    """C14 variant: tensor-parallel-size: 4 in service_server_args counts as tp; nothing is added."""
    rc, failed, report = run_preflight(tmp_path, host_facts(), {'tensor-parallel-size': 4, 'config': 'server.yaml'},
                                       'host: 0.0.0.0\nport: 8000\n')
    assert rc == 0, failed
    assert report['gpus_needed'] == 4 and report['port'] == 8000
    assert 'tp-size' not in report['args']


def test_c14_tp_of_the_config_file_larger_than_the_host_is_refused(tmp_path):
    rc, failed, report = run_preflight(tmp_path, host_facts(gpus=2), {'config': 'server.yaml'}, C14_YAML)
    assert rc != 0 and 'needs 4 GPU(s)' in failed and 'service_require_gpus' in failed


def test_c16_mig_refuses_tp_across_slices(tmp_path):
    """C16: tp 4 on MIG slices is refused (disable MIG or one server per slice); without tp no tp is derived."""
    rc, failed, report = run_preflight(tmp_path, host_facts(mig=True), {'tp': 4})
    assert rc != 0 and 'Disable MIG' in failed and 'one server per slice' in failed
    rc, failed, report = run_preflight(tmp_path, host_facts(mig=True), {})
    assert rc == 0, failed
    assert 'tp-size' not in report['args'] and report['gpus_needed'] == 1


@pytest.mark.parametrize('require_gpus', [True, False])
def test_c17_lost_gpu_is_refused(tmp_path, require_gpus):
    """C17: 'GPU 0000:BA:00.0 is lost: reset or reboot', whatever service_require_gpus says; no tp 7."""
    rc, failed, report = run_preflight(tmp_path, host_facts(gpus=7, lost=['0000:BA:00.0']), {},
                                       service_require_gpus=require_gpus)
    assert rc != 0 and 'GPU 0000:BA:00.0 is lost: reset or reboot' in failed
    assert 'service_require_gpus' not in failed and 'Lower' not in failed


@pytest.mark.parametrize('require_gpus', [True, False])
def test_c18_mismatch_is_refused_whatever_the_gpu_check(tmp_path, require_gpus):
    """C18: a reboot is needed before any restart, with service_require_gpus true or false."""
    rc, failed, report = run_preflight(tmp_path, host_facts(gpus=0, error=MISMATCH), {'tp': 8},
                                       service_require_gpus=require_gpus)
    assert rc != 0 and 'A reboot is needed before any restart' in failed
    assert '570.172.08' in failed and '570.195' in failed
    assert 'service_require_gpus' not in failed and 'Lower' not in failed


def test_c18_cutover_preflight_refuses_too(tmp_path):
    """C18: the cutover role on its own refuses before it would stop the running server."""
    rc, failed, report = run_preflight(tmp_path, host_facts(gpus=0, error=MISMATCH), {}, role='cutover')
    assert rc != 0 and 'A reboot is needed before any restart' in failed
    rc, failed, report = run_preflight(tmp_path, host_facts(), {}, role='cutover')
    assert rc == 0, failed


def test_c14_adopted_server_with_a_config_file(tmp_path):
    """C14: the hand-started server runs with --config server.yaml (relative to its cwd): it is adopted on the
    YAML's port, and its settings (port 8000, 4 GPUs) come from that file."""
    (tmp_path / 'server.yaml').write_text(C14_YAML)
    model = tmp_path / 'model'
    args = ['--model-path', str(model), '--config', 'server.yaml']
    stray = {'main_pid': 99, 'pids': [99], 'port': 8000, 'host': '0.0.0.0', 'tp': 4, 'args': args,
             'argv': [sys.executable, '-m', 'sglang.launch_server'] + args, 'executable': sys.executable,
             'cwd': str(tmp_path), 'env': {}, 'user': 'root', 'redacted_args': [], 'redacted_env': []}
    facts = host_facts()
    facts['strays'] = [stray]
    rc, failed, report = run_preflight(tmp_path, facts, {'port': 8000}, service_adopt=True)
    assert rc == 0, failed
    assert report['settings']['port'] == 8000 and report['gpus_needed'] == 4


def test_every_preflight_failure_is_reported_at_once(tmp_path):
    """One run names every failed check of the service pre-flight, local and on the host, each after its name: the
    --config file missing, a foreign listener on the port, a model directory without config.json, an invalid
    environment value and a missing working directory (nothing on the host is changed)."""
    listener = {'proto': 'tcp', 'host': '0.0.0.0', 'port': 30000, 'inode': 1, 'pid': 4242, 'process': 'nginx'}
    rc, failed, report = run_preflight(
        tmp_path, host_facts(listeners=[listener]), {'config': 'missing.yaml', 'speculative-draft-model-path': '/nonexistent-draft'},
        service_environment={'CUDA_HOME': ':/usr/local/cuda'}, service_working_directory=str(tmp_path / 'gone'))
    assert rc != 0 and report is None
    for name, text in [
            ('Check that the --config file can be read', 'service_server_args.config names %s/gone/missing.yaml' % tmp_path),
            ('Check that nothing but the SGLang server being replaced holds the port', 'Port 30000 is held by nginx'),
            ('Check the model directories', '/nonexistent-draft/config.json does not exist or cannot be read'),
            ('Check environment variable names and values (only names are ever printed)',
             'Environment variable(s) of service_environment are not valid'),
            ('Check that the working directory exists (or is the cache directory the role creates)',
             'The working directory %s/gone does not exist' % tmp_path)]:
        assert '[%s] %s' % (name, text) in failed, (name, failed)
    assert failed.startswith('5 pre-flight check(s) failed on localhost; nothing was changed.'), failed
