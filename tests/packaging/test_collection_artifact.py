"""The built collection tarball (scripts/build-collection.sh) holds the collection and nothing of its development,
and the copy installed from it into build/collections is the one Ansible resolves with the environment of the
molecule stage (scripts/test.sh puts build/collections first in ANSIBLE_COLLECTIONS_PATH).

Run by scripts/test.sh's build stage, right after scripts/build-collection.sh."""

import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, "build")
INSTALLED = os.path.join(BUILD, "collections", "ansible_collections", "inferops", "sglang")
with open(os.path.join(ROOT, "galaxy.yml")) as _handle:
    GALAXY = yaml.safe_load(_handle)
TARBALL = os.path.join(BUILD, "%s-%s-%s.tar.gz" % (GALAXY["namespace"], GALAXY["name"], GALAXY["version"]))

# Top-level entries a published collection of ours may hold; anything else is development material.
ALLOWED_TOP = {"MANIFEST.json", "FILES.json", "README.md", "LICENSE", "CHANGELOG.rst", "changelogs", "meta",
               "playbooks", "plugins", "roles", "inventory", "site.yml", "docs"}
FORBIDDEN_TOP = {"tests", "extensions", ".ci", "scripts", "benchmarks", "build", ".config", ".venv",
                 ".cache", ".git", "requirements-dev.txt", "CONTRIBUTING.md", ".ansible-lint", ".gitignore"}


def members():
    if not os.path.exists(TARBALL):
        pytest.fail("%s is missing: run scripts/build-collection.sh first" % os.path.relpath(TARBALL, ROOT))
    with tarfile.open(TARBALL) as tar:
        return [m.name for m in tar.getmembers()]


def shipped_sources(top):
    """Files of the working tree under TOP that belong in the tarball (no byte code)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        found.extend(os.path.relpath(os.path.join(dirpath, f), ROOT) for f in filenames if not f.endswith(".pyc"))
    return sorted(found)


def tool(name):
    beside = os.path.join(os.path.dirname(sys.executable), name)
    return beside if os.path.exists(beside) else shutil.which(name)


def run(*argv):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run([tool(argv[0]), *argv[1:]], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, "%s: rc %d\n%s\n%s" % (" ".join(argv), proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout


def test_tarball_has_no_development_material():
    names = members()
    tops = {name.split("/")[0] for name in names}
    assert not tops & FORBIDDEN_TOP, sorted(tops & FORBIDDEN_TOP)
    assert tops <= ALLOWED_TOP, "unexpected in the tarball: %s (galaxy.yml build_ignore)" % sorted(tops - ALLOWED_TOP)
    assert not [n for n in names if n.split("/")[0].startswith(".")]
    assert not [n for n in names if "__pycache__" in n.split("/") or n.endswith((".pyc", ".tar.gz"))]


def test_tarball_has_the_collection():
    names = set(members())
    for required in ("MANIFEST.json", "FILES.json", "README.md", "LICENSE", "CHANGELOG.rst", "meta/runtime.yml",
                     "meta/execution-environment.yml", "meta/ee-requirements.txt", "meta/ee/execution-environment.yml",
                     "meta/ee/requirements.yml", "playbooks/site.yml", "changelogs/changelog.yaml"):
        assert required in names, required
    for top in ("plugins", "roles", "playbooks"):
        missing = [path for path in shipped_sources(top) if path not in names]
        assert not missing, missing


def test_manifest_says_what_galaxy_yml_says():
    with tarfile.open(TARBALL) as tar:
        manifest = json.load(tar.extractfile("MANIFEST.json"))
    info = manifest["collection_info"]
    expected = (GALAXY["namespace"], GALAXY["name"], GALAXY["version"])
    assert (info["namespace"], info["name"], info["version"]) == expected
    assert info["license"] == ["GPL-3.0-or-later"]
    assert info["dependencies"] == (GALAXY.get("dependencies") or {})
    with open(os.path.join(INSTALLED, "MANIFEST.json")) as handle:
        assert json.load(handle) == manifest, "build/collections does not hold this tarball"


def test_tarball_carries_the_gpl3_text():
    """galaxy.yml says GPL-3.0-or-later and every file header points to the license text: the tarball has it whole."""
    with tarfile.open(TARBALL) as tar:
        text = tar.extractfile("LICENSE").read().decode("utf-8")
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as handle:
        assert text == handle.read()
    assert text.lstrip().startswith("GNU GENERAL PUBLIC LICENSE\n                       Version 3, 29 June 2007")
    assert "END OF TERMS AND CONDITIONS" in text and "How to Apply These Terms to Your New Programs" in text


def test_ansible_resolves_the_installed_copy():
    """With this environment (the molecule stage's), inferops.sglang comes from build/collections, not the repo."""
    assert os.path.isfile(os.path.join(INSTALLED, "MANIFEST.json"))
    configured = os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep)
    assert os.path.realpath(configured[0]) == os.path.realpath(os.path.join(BUILD, "collections")), \
        "ANSIBLE_COLLECTIONS_PATH must name build/collections first: %s" % configured
    listed = json.loads(run("ansible-galaxy", "collection", "list", "inferops.sglang", "--format", "json"))
    installed_root = os.path.realpath(os.path.dirname(os.path.dirname(INSTALLED)))
    assert {os.path.realpath(path): found for path, found in listed.items()}.get(installed_root) == \
        {"inferops.sglang": {"version": GALAXY["version"]}}, listed
    # The resolver itself: where ansible-doc loads the module from.
    doc = json.loads(run("ansible-doc", "-t", "module", "--json", "inferops.sglang.host_facts"))
    filename = doc["inferops.sglang.host_facts"]["doc"]["filename"]
    assert os.path.realpath(filename).startswith(os.path.realpath(INSTALLED) + os.sep), filename


def test_installed_playbook_and_roles_load():
    """The playbook the molecule scenarios import (inferops.sglang.site) parses from the installed copy."""
    out = run("ansible-playbook", "inferops.sglang.site", "--syntax-check", "-i", os.path.join(ROOT, "inventory", "demo"))
    assert "playbook: " in out and os.path.realpath(INSTALLED) in os.path.realpath(out.split("playbook: ", 1)[1].strip())


def test_tarball_ships_the_operator_guides_and_nothing_else_of_docs():
    """The guides under docs/docsite/ go with the collection (docs.ansible.com and `ansible-doc` users read them);
    the docs build's configuration (docs/conf.py, ...) does not."""
    names = members()
    docs = sorted(n for n in names if n == "docs" or n.startswith("docs/"))
    shipped = set(shipped_sources(os.path.join("docs", "docsite")))
    assert shipped and shipped <= set(docs), sorted(shipped - set(docs))
    assert [n for n in docs if n not in shipped and n not in ("docs", "docs/docsite", "docs/docsite/rst")] == []
