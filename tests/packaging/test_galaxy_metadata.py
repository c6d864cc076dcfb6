"""The collection's metadata says what is true: galaxy.yml's dependencies are exactly the collections the roles,
playbooks and plugins use (in both directions) with ranges the installed copies meet, meta/runtime.yml's
requires_ansible claims exactly the ansible-core lines scripts/ansible-test.sh proves, and CHANGELOG.rst is what
antsibull-changelog makes from changelogs/changelog.yaml.

Run by scripts/test.sh's build stage (tests/packaging)."""

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
from ansible.galaxy.dependency_resolution.versioning import meets_requirements
from ansible.module_utils.compat.version import LooseVersion

import collection_metadata as meta

# The collections the tests and scenarios run with (scripts/setup.sh installs them into the .venv).
SITE_COLLECTIONS = os.path.join(meta.ROOT, ".venv", "lib", "python%d.%d" % sys.version_info[:2], "site-packages",
                                "ansible_collections")

SAMPLE = """
- name: A play
  hosts: all
  connection: community.docker.docker
  collections:
    - ansible.utils
  roles:
    - role: acme.things.thing
  tasks:
    - name: Module
      community.general.supervisorctl:
        name: x
    - name: Filter, test, lookup
      ansible.builtin.debug:
        msg: "{{ x | community.general.json_query('a') }} {{ y is not ansible.netcommon.in_network('n') }}
          {{ lookup('community.hashi_vault.hashi_vault', 'k') }} {{ z | inferops.sglang.server_argv }}"
    - name: Role
      ansible.builtin.include_role:
        name: other.roles.base
"""


def test_scanner_sees_every_form_of_use():
    """The scan the dependency test relies on finds modules, filters, tests, lookups, connections, roles and the
    collections keyword, and leaves ansible-core's and this collection's names out of the dependencies."""
    found = meta.scan_yaml_text(SAMPLE)
    assert sorted(meta.used_collections(found)) == [
        "acme.things", "ansible.netcommon", "ansible.utils", "community.docker", "community.general",
        "community.hashi_vault", "other.roles"]
    assert ("filter", "community.general.json_query") in found
    assert ("test", "ansible.netcommon.in_network") in found
    assert ("lookup", "community.hashi_vault.hashi_vault") in found
    assert ("module", "community.general.supervisorctl") in found


def test_scanner_reads_the_collection():
    """The scan is not empty on the real tree (a broken glob would make the next test pass vacuously)."""
    kinds = {kind for kind, name in meta.used_plugins()}
    assert {"module", "filter", "role"} <= kinds, kinds


def test_dependencies_are_exactly_the_collections_used():
    used = meta.used_collections()
    declared = set(meta.galaxy().get("dependencies") or {})
    assert sorted(set(used) - declared) == [], "used but not in galaxy.yml dependencies: %s" % {
        name: used[name] for name in set(used) - declared}
    assert sorted(declared - set(used)) == [], "in galaxy.yml dependencies but used by nothing in roles/, " \
        "playbooks/ or plugins/ (tests and molecule are no runtime dependency)"


def test_installed_dependencies_meet_the_declared_ranges():
    """The copies the tests and scenarios run with (the .venv's) are versions galaxy.yml admits."""
    for name, spec in sorted((meta.galaxy().get("dependencies") or {}).items()):
        manifest = os.path.join(SITE_COLLECTIONS, *name.split("."), "MANIFEST.json")
        assert os.path.isfile(manifest), "%s is declared but not installed in the .venv" % name
        with open(manifest) as handle:
            version = json.load(handle)["collection_info"]["version"]
        assert meets_requirements(version, spec), "%s %s does not meet %s" % (name, version, spec)


def test_requires_ansible_claims_exactly_the_proven_lines():
    """requires_ansible admits every release scripts/ansible-test.sh --core installs, the lines between them have a
    release there too, and the line before the oldest and after the newest are refused."""
    releases = meta.core_releases()
    lines = [meta.line_of(r) for r in releases]
    assert len(set(lines)) == len(lines), "one release per line: %s" % releases
    minors = [int(line.split(".")[1]) for line in lines]
    assert all(line.startswith("2.") for line in lines) and minors == list(range(minors[0], minors[-1] + 1)), lines
    spec = meta.requires_ansible()
    assert spec == ">=%s.0,<2.%d.0" % (lines[0], minors[-1] + 1), spec
    for release in releases:
        assert meets_requirements(release, spec), (release, spec)
    for outside in ("2.%d.99" % (minors[0] - 1), "2.%d.0" % (minors[-1] + 1)):
        assert not meets_requirements(outside, spec), (outside, spec)
    assert LooseVersion(releases[0]) < LooseVersion(releases[-1])


def test_ci_proves_the_oldest_and_the_newest_line():
    """The sanity stage of scripts/test.sh runs sanity and units on the oldest and the newest claimed line."""
    with open(os.path.join(meta.ROOT, "scripts", "test.sh")) as handle:
        text = handle.read()
    stage = text[text.index("    sanity)"):text.index(";;", text.index("    sanity)"))]
    for line in (meta.line_of(meta.core_releases()[0]), meta.line_of(meta.core_releases()[-1])):
        for command in ("sanity", "units"):
            assert "--core %s %s" % (line, command) in stage or ("--core \"$" in stage and line in stage), \
                "scripts/test.sh's sanity stage does not run %s on ansible-core %s" % (command, line)


def changelog_tool():
    beside = os.path.join(os.path.dirname(sys.executable), "antsibull-changelog")
    found = beside if os.path.exists(beside) else shutil.which("antsibull-changelog")
    if not found:
        pytest.fail("antsibull-changelog is missing (requirements-dev.txt)")
    return found


def test_changelog_rst_is_generated_from_changelog_yaml(tmp_path):
    """`antsibull-changelog generate` on a copy of galaxy.yml and changelogs/ gives the committed CHANGELOG.rst."""
    copy = tmp_path / "collection"
    copy.mkdir()
    shutil.copy(os.path.join(meta.ROOT, "galaxy.yml"), str(copy))
    shutil.copytree(os.path.join(meta.ROOT, "changelogs"), str(copy / "changelogs"))
    for fragment in glob.glob(str(copy / "changelogs" / "fragments" / "*")):
        os.remove(fragment)  # unreleased fragments do not belong in CHANGELOG.rst
    proc = subprocess.run([changelog_tool(), "generate"], cwd=str(copy), capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(os.path.join(meta.ROOT, "CHANGELOG.rst")) as handle:
        committed = handle.read()
    assert (copy / "CHANGELOG.rst").read_text() == committed, \
        "CHANGELOG.rst is not what changelogs/changelog.yaml makes: run antsibull-changelog generate"


def test_galaxy_version_is_a_release_in_the_changelog_or_later():
    """galaxy.yml's version is the newest release of changelogs/changelog.yaml, or the next one being prepared."""
    releases = sorted(meta.load_yaml(os.path.join(meta.ROOT, "changelogs", "changelog.yaml"))["releases"],
                      key=LooseVersion)
    assert releases, "changelogs/changelog.yaml has no release: antsibull-changelog release"
    assert LooseVersion(meta.galaxy()["version"]) >= LooseVersion(releases[-1]), (meta.galaxy()["version"], releases)
