"""The roles talk through declared outputs only.

A role's private variables (``_<role>_*`` derived in vars/, ``__<role>_*`` registered or set) belong to that role. No
other role, no template of another role, no filter or module and no playbook may read them: what one role computes
and another needs is a declared, namespaced output (``inferops_sglang_*``) handed in as a role parameter by
``playbooks/site.yml``. This test greps the tree and fails on any such read.
"""

import glob
import os
import re

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "roles", "*")) if os.path.isdir(p))
# Longest names first, so that a role whose name starts with another's is matched whole.
PRIVATE = re.compile(r"(?<![A-Za-z0-9_])__?(%s)_[A-Za-z0-9_]+" % "|".join(sorted(ROLES, key=len, reverse=True)))


def files(*patterns):
    found = []
    for pattern in patterns:
        found.extend(glob.glob(os.path.join(ROOT, pattern), recursive=True))
    return sorted(set(found))


# In Python, a variable is read by its name as a string (``hostvars[host]['__cutover_summary']``); bare names such as
# the module_utils ``_service_manager`` are Python modules, not role variables.
QUOTED = re.compile(r"""(['"])(%s)\1""" % PRIVATE.pattern)


def private_reads(path, owner=None):
    """(line number, name) of every private variable of a role other than ``owner`` in ``path``."""
    pattern = QUOTED if path.endswith(".py") else PRIVATE
    group = 3 if path.endswith(".py") else 1
    reads = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            for match in pattern.finditer(line):
                if match.group(group) != owner:
                    reads.append((number, match.group(0)))
    return reads


def test_the_pattern_sees_private_names():
    assert PRIVATE.search("{{ __service_result.unit }}").group(1) == "service"
    assert PRIVATE.search("when: _cutover_routed | bool").group(1) == "cutover"
    assert PRIVATE.search("{{ __cuda_env_changed }}").group(1) == "cuda_env"
    assert PRIVATE.search("{{ __known_good_stat }}").group(1) == "known_good"
    assert not PRIVATE.search("service_cuda_env_file: x")
    assert not PRIVATE.search("{{ inferops_sglang_service.unit }}")
    assert not PRIVATE.search("cutover_service: {}")
    assert QUOTED.search("summary = hostvars[host].get('__cutover_summary')").group(3) == "cutover"
    assert not QUOTED.search("from ..module_utils import _service_manager")


@pytest.mark.parametrize("role", ROLES)
def test_a_role_reads_only_its_own_private_variables(role):
    offenders = []
    for path in files("roles/%s/**/*.yml" % role, "roles/%s/**/*.j2" % role):
        offenders.extend("%s:%d: %s" % (os.path.relpath(path, ROOT), n, name) for n, name in private_reads(path, role))
    assert not offenders, "reads of another role's private variables:\n" + "\n".join(offenders)


def test_playbooks_plugins_and_docs_read_no_private_role_variable():
    offenders = []
    for path in files("playbooks/**/*.yml", "site.yml", "plugins/**/*.py", "plugins/**/*.yml", "extensions/**/*.yml",
                      "extensions/**/*.py", "inventory/**/*.yml", "tests/integration/*.yml"):
        offenders.extend("%s:%d: %s" % (os.path.relpath(path, ROOT), n, name) for n, name in private_reads(path))
    assert not offenders, "reads of a role's private variables:\n" + "\n".join(offenders)


def separate_preflights():
    """The roles whose pre-flight a playbook runs on its own (``tasks_from: preflight``), before any role changes
    anything."""
    found = set()
    for path in files("playbooks/*.yml"):
        with open(path, encoding="utf-8") as handle:
            found.update(re.findall(r"name: inferops\.sglang\.(\w+)\n\s+tasks_from: preflight\b", handle.read()))
    return found


# Roles that change nothing on the servers: their pre-flight (the inputs' checks) is main's first step.
CHANGE_NOTHING = {"facts", "fleet"}


def test_the_roles_that_change_a_host_have_their_preflight_run_first():
    assert {"cuda_env", "service", "cutover"} <= separate_preflights()
    assert not CHANGE_NOTHING & separate_preflights()


# Roles whose change steps are an entry point of their own (apply): their main is the pre-flight, then apply.
SPLIT = {"cuda_env", "service"}


@pytest.mark.parametrize("role", ROLES)
def test_main_does_not_run_the_preflight_a_second_time(role):
    """site.yml runs the pre-flight of every role that changes a host first; then the change steps alone of a role
    that has them as an entry point (apply), else that role's main, which runs the pre-flight only when it has not run
    yet (the router's main runs its own, the router play has no other). A role that changes nothing on the servers
    (facts, fleet) runs its pre-flight as its first step."""
    main = os.path.join(ROOT, "roles", role, "tasks", "main.yml")
    preflight = os.path.join(ROOT, "roles", role, "tasks", "preflight.yml")
    if not os.path.exists(preflight):
        return
    with open(main, encoding="utf-8") as handle:
        text = handle.read()
    if role in CHANGE_NOTHING:
        assert "import_tasks: preflight.yml" in text, "%s does not check its inputs first" % role
        return
    if role in SPLIT:
        import yaml
        steps = [next(value for key, value in task.items() if key.endswith("import_tasks")) for task in yaml.safe_load(text)]
        assert steps == ["preflight.yml", "apply.yml"], "%s: main is its pre-flight, then apply (%s)" % (role, steps)
        with open(os.path.join(ROOT, "roles", role, "tasks", "apply.yml"), encoding="utf-8") as handle:
            assert not re.search(r"_tasks:\s*preflight\.yml", handle.read()), "%s: apply runs no pre-flight" % role
        with open(os.path.join(ROOT, "playbooks", "site.yml"), encoding="utf-8") as handle:
            site = handle.read()
        assert re.search(r"name: inferops\.sglang\.%s\n\s+tasks_from: apply\b" % role, site), "site.yml runs %s's apply" % role
        return
    assert "import_tasks: preflight.yml" not in text, "%s imports its pre-flight unconditionally" % role
    if "preflight.yml" in text:
        assert "__%s_preflight_passed" % role in text, "%s runs its pre-flight without checking it ran" % role


def test_roles_use_only_declared_collections():
    """Every collection the roles and playbooks use is ansible.builtin, this one, or a galaxy.yml dependency."""
    import yaml

    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        declared = set((yaml.safe_load(handle).get("dependencies") or {}).keys())
    allowed = {"ansible.builtin", "inferops.sglang"} | declared
    fqcn = re.compile(r"(?<![A-Za-z0-9_.])([a-z][a-z0-9_]*\.[a-z][a-z0-9_]*)\.[a-z][a-z0-9_]*")
    collections = {"ansible", "community", "containers", "kubernetes", "amazon", "azure", "google", "cisco"}
    offenders = []
    for path in files("roles/**/*.yml", "roles/**/*.j2", "playbooks/**/*.yml"):
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                for match in fqcn.finditer(line):
                    name = match.group(1)
                    if name.split(".")[0] in collections and name not in allowed:
                        offenders.append("%s:%d: %s" % (os.path.relpath(path, ROOT), number, match.group(0)))
    assert not offenders, "collections used but not declared in galaxy.yml:\n" + "\n".join(offenders)
