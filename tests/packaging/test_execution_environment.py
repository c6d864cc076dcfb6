"""The execution environment image definition (meta/ee/execution-environment.yml, ansible-builder format 3) is what
the collection's own metadata says: the ansible-core lines of meta/runtime.yml, and requirements.yml made from
galaxy.yml (this collection at its version, and its dependencies); Python and system packages come from the
collection's meta/execution-environment.yml, which ansible-builder reads from the installed collection
(tests/unit/test_execution_environment.py checks that one against the imports of plugins/).
ansible-builder create (no image build) accepts the definition and puts that requirements.yml into its context.

Rewrite meta/ee/requirements.yml from galaxy.yml:  python tests/packaging/test_execution_environment.py --write
Run by scripts/test.sh's build stage (tests/packaging)."""

import os
import subprocess
import sys

import pytest
import yaml

import collection_metadata as meta

EE_DIR = os.path.join(meta.ROOT, "meta", "ee")
EE_FILE = os.path.join(EE_DIR, "execution-environment.yml")
REQUIREMENTS = os.path.join(EE_DIR, "requirements.yml")
COLLECTION_EE = os.path.join(meta.ROOT, "meta", "execution-environment.yml")
# ansible-builder for the create check, in a venv of its own (.cache/ansible-builder), from the pip mirror.
BUILDER = "ansible-builder==3.2.0"
BUILDER_VENV = os.path.join(meta.ROOT, ".cache", "ansible-builder")


def definition():
    return meta.load_yaml(EE_FILE)


def test_requirements_yml_is_made_from_galaxy_yml():
    with open(REQUIREMENTS) as handle:
        assert handle.read() == meta.ee_requirements_text(), \
            "meta/ee/requirements.yml differs from galaxy.yml: python tests/packaging/test_execution_environment.py --write"
    collections = meta.load_yaml(REQUIREMENTS)["collections"]
    galaxy = meta.galaxy()
    assert collections[0] == {"name": "%s.%s" % (galaxy["namespace"], galaxy["name"]), "version": "==" + galaxy["version"]}
    assert {c["name"]: c["version"] for c in collections[1:]} == (galaxy.get("dependencies") or {})


def test_definition_takes_ansible_core_and_collections_from_the_metadata():
    ee = definition()
    assert ee["version"] == 3
    dependencies = ee["dependencies"]
    assert dependencies["ansible_core"] == {"package_pip": "ansible-core" + meta.requires_ansible()}
    assert dependencies["galaxy"] == "requirements.yml"
    assert os.path.isfile(os.path.join(EE_DIR, dependencies["galaxy"]))
    # The collection's own needs come through its meta/execution-environment.yml; none listed twice here.
    assert "python" not in dependencies and "system" not in dependencies, sorted(dependencies)
    assert set(meta.load_yaml(COLLECTION_EE)["dependencies"]) <= {"python", "system"}


def test_image_python_runs_every_claimed_line():
    """ansible-core 2.20 and later need Python 3.12 or newer on the controller; 2.16 and 2.17 at most 3.12."""
    path = definition()["dependencies"]["python_interpreter"]["python_path"]
    version = tuple(int(part) for part in path.rsplit("python", 1)[1].split("."))
    assert version == (3, 12), path


def builder():
    tool = os.path.join(BUILDER_VENV, "bin", "ansible-builder")
    if not os.path.exists(tool):
        for argv in ([sys.executable, "-m", "venv", BUILDER_VENV],
                     [os.path.join(BUILDER_VENV, "bin", "python"), "-m", "pip", "install", "-q", BUILDER]):
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
            if proc.returncode:
                pytest.fail("cannot install %s from the pip mirror: %s" % (BUILDER, proc.stdout + proc.stderr))
    return tool


def test_ansible_builder_create_accepts_the_definition(tmp_path):
    context = tmp_path / "context"
    proc = subprocess.run([builder(), "create", "-f", EE_FILE, "-c", str(context), "--output-filename", "Containerfile"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(REQUIREMENTS) as handle:
        expected = yaml.safe_load(handle)
    with open(str(context / "_build" / "requirements.yml")) as handle:
        assert yaml.safe_load(handle) == expected
    containerfile = (context / "Containerfile").read_text()
    assert meta.requires_ansible() in containerfile, containerfile


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/packaging/test_execution_environment.py --write")
    with open(REQUIREMENTS, "w") as out:
        out.write(meta.ee_requirements_text())
    print("wrote %s" % os.path.relpath(REQUIREMENTS, meta.ROOT))
