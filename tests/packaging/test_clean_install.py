"""Acceptance: from a clean virtual environment with only ansible-core, installing the built tarball through a
requirements.yml gives everything the default and no_systemd scenarios need.

The environment is scripts/ansible-test.sh's for each line (.cache/ansible-core/X.Y: ansible-core alone, no
collection); the lines are those INFEROPS_CLEAN_INSTALL_CORE names (space-separated; default: the oldest and the
newest claimed; scripts/ansible-matrix.sh runs every line). The collection is installed offline from build/ (scripts/build-collection.sh) with its galaxy.yml
dependencies as local tarballs into an empty directory, then, with ANSIBLE_COLLECTIONS_PATH naming only that
directory (no sys.path scan, an empty HOME, no ansible.cfg), every playbook of the collection and the converge
playbooks of the default and no_systemd scenarios pass --syntax-check, and ansible-doc finds every module, action,
filter, lookup and role the roles and playbooks use.

Run by scripts/test.sh's build stage (tests/packaging), after scripts/build-collection.sh."""

import glob
import json
import os
import subprocess

import pytest
import yaml

import collection_metadata as meta

CORES = (os.environ.get("INFEROPS_CLEAN_INSTALL_CORE") or "%s %s" % (
    meta.line_of(meta.core_releases()[0]), meta.line_of(meta.core_releases()[-1]))).split()
GALAXY = meta.galaxy()
TARBALL = os.path.join(meta.ROOT, "build", "%s-%s-%s.tar.gz" % (GALAXY["namespace"], GALAXY["name"], GALAXY["version"]))
# Where a dependency's tarball is looked for (no Galaxy server is reachable from CI).
DEPENDENCY_TARBALLS = os.path.join(meta.ROOT, ".cache", "collections")
SCENARIOS = ("default", "no_systemd")
# ansible-doc's plugin type for each kind of use the scan finds.
DOC_TYPES = {"module": "module", "filter": "filter", "test": "test", "lookup": "lookup", "role": "role",
             "connection": "connection", "become": "become", "strategy": "strategy"}

# Run in the clean environment: the distributions that are neither ansible-core nor something it requires.
NOT_ANSIBLE_CORE = r"""
import importlib.metadata as md, json, re
canon = lambda n: re.sub(r"[-_.]+", "-", n).lower()
dists = {canon(d.metadata["Name"]): d for d in md.distributions()}
seen, todo = set(), ["ansible-core"]
while todo:
    name = todo.pop()
    if name in seen or name not in dists:
        continue
    seen.add(name)
    for req in dists[name].requires or []:
        if "extra ==" not in req:
            todo.append(canon(re.split(r"[\s\[<>=!~;(]", req, maxsplit=1)[0]))
print(json.dumps(sorted(set(dists) - seen - {"pip", "setuptools", "wheel"})))
"""


def run(argv, env, cwd, timeout=300):
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, "%s: rc %d\n%s\n%s" % (" ".join(argv), proc.returncode, proc.stdout, proc.stderr)
    return proc


@pytest.fixture(scope="module", params=CORES)
def clean(request, tmp_path_factory):
    """(ansible-core line, venv bin dir, environment, work dir) after the install into work/collections."""
    core = request.param
    if not os.path.exists(TARBALL):
        pytest.fail("%s is missing: run scripts/build-collection.sh first" % os.path.relpath(TARBALL, meta.ROOT))
    made = subprocess.run(["bash", os.path.join(meta.ROOT, "scripts", "ansible-test.sh"), "--core", core, "venv"],
                          capture_output=True, text=True, timeout=900, check=False)
    assert made.returncode == 0, made.stdout + made.stderr
    venv_bin = os.path.join(made.stdout.strip(), "bin")
    work = tmp_path_factory.mktemp("clean-install")
    (work / "home").mkdir()
    env = {
        "PATH": "%s:/usr/bin:/bin" % venv_bin,
        "HOME": str(work / "home"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "ANSIBLE_COLLECTIONS_PATH": str(work / "collections"),
        "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "False",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_LOCAL_TEMP": str(work / "tmp"),
    }
    extra = json.loads(run([os.path.join(venv_bin, "python"), "-c", NOT_ANSIBLE_CORE], env, str(work)).stdout)
    assert extra == [], "the environment of ansible-core %s is not clean: %s" % (core, extra)
    requirements = [{"name": TARBALL, "type": "file"}]
    for name in sorted(GALAXY.get("dependencies") or {}):
        found = sorted(glob.glob(os.path.join(DEPENDENCY_TARBALLS, "%s-*.tar.gz" % name.replace(".", "-"))))
        assert found, "no tarball of the dependency %s in %s (ansible-galaxy collection download it there)" % (
            name, os.path.relpath(DEPENDENCY_TARBALLS, meta.ROOT))
        requirements.append({"name": found[-1], "type": "file"})
    (work / "requirements.yml").write_text(yaml.safe_dump({"collections": requirements}))
    run([os.path.join(venv_bin, "ansible-galaxy"), "collection", "install", "--offline", "-r", "requirements.yml",
         "-p", str(work / "collections")], env, str(work))
    return core, venv_bin, env, work


def test_installs_the_collection_and_its_dependencies(clean):
    core, venv_bin, env, work = clean
    version = run([os.path.join(venv_bin, "ansible"), "--version"], env, str(work)).stdout.splitlines()[0]
    assert "core %s." % core in version, version
    listed = json.loads(run([os.path.join(venv_bin, "ansible-galaxy"), "collection", "list", "--format", "json"],
                            env, str(work)).stdout)
    # What the install put into work/collections (ansible-core may list its own internal collections elsewhere).
    installed = {os.path.realpath(path): collections for path, collections in listed.items()}
    found = {name: info["version"] for name, info in
             installed.get(os.path.realpath(str(work / "collections" / "ansible_collections")), {}).items()}
    expected = {"%s.%s" % (GALAXY["namespace"], GALAXY["name"]): GALAXY["version"]}
    assert set(found) == set(expected) | set(GALAXY.get("dependencies") or {}), found
    assert found["inferops.sglang"] == GALAXY["version"]


def test_playbooks_and_scenario_converges_parse(clean):
    """Each playbook of the collection by its FQCN, and the default and no_systemd scenarios' converge.yml."""
    core, venv_bin, env, work = clean
    installed = work / "collections" / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"]
    playbooks = ["%s.%s.%s" % (GALAXY["namespace"], GALAXY["name"], os.path.splitext(os.path.basename(p))[0])
                 for p in sorted(glob.glob(str(installed / "playbooks" / "*.yml")))]
    assert "inferops.sglang.site" in playbooks, playbooks
    converges = [os.path.join(meta.ROOT, "extensions", "molecule", s, "converge.yml") for s in SCENARIOS]
    for playbook in playbooks + converges:
        proc = run([os.path.join(venv_bin, "ansible-playbook"), "--syntax-check", "-i", "localhost,", playbook],
                   env, str(work))
        assert "does not support Ansible version" not in proc.stderr, proc.stderr


def test_every_plugin_the_roles_use_is_there(clean):
    """ansible-doc finds, with only the installed tree, every module, filter, lookup, test and role the roles,
    playbooks and plugins use (ansible.builtin's included: they must exist in this ansible-core)."""
    core, venv_bin, env, work = clean
    wanted = {}
    for kind, name in meta.used_plugins():
        if kind in DOC_TYPES:
            wanted.setdefault(DOC_TYPES[kind], set()).add(name)
    assert wanted.get("module") and wanted.get("filter") and wanted.get("role"), wanted
    for doc_type, names in sorted(wanted.items()):
        proc = run([os.path.join(venv_bin, "ansible-doc"), "-t", doc_type, "--json"] + sorted(names), env, str(work))
        documented = set(json.loads(proc.stdout))
        assert sorted(names - documented) == [], "ansible-core %s with the installed collections has no %s %s\n%s" % (
            core, doc_type, sorted(names - documented), proc.stderr)
