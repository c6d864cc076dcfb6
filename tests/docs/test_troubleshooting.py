"""The troubleshooting page (docs/docsite/rst/troubleshooting.rst) has one entry per pre-flight check, found by the
task header Ansible prints when the check fails: ``TASK [inferops.sglang.<role> : <task name>]``.

A pre-flight check is an assert, or a task of one of the collection's own modules, in roles/*/tasks/preflight.yml or
in the rollback's pick of a known-good entry (roles/known_good/tasks/select.yml). A new check without an entry fails
here, and so does an entry whose task was renamed or removed. Each kind of GPU blocker (plugins/module_utils/
_nvidia_smi.py, gpu_blockers: one assert, several messages) is named on the page too.

A pre-flight that reports every failure at once runs its checks inside one task: each failure is printed after its
check's name in brackets, ``[<check name>] <message>``, and the page names each such check as ``[<check name>]``. They
are the keys of a task's ``vars`` mapping whose name ends in ``_checks`` (one templated message each, empty when the
check passes), and the names a module of the pre-flight checks with (NAMED_CHECK_SOURCES: ``CHECK_* = '<name>'``, the service role's plan among them).

Run by scripts/test.sh's docs stage (python -m pytest tests/docs)."""

import glob
import os
import re

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PAGE = os.path.join(ROOT, "docs", "docsite", "rst", "troubleshooting.rst")
CHECK_FILES = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "preflight.yml"))) + [
    os.path.join(ROOT, "roles", "known_good", "tasks", "select.yml")]
HEADER = re.compile(r"TASK \[inferops\.sglang\.(\w+) : ([^\]\n]+)\]")
NAMED_ENTRY = re.compile(r"``\[([^\]\n]+)\]``")
# role -> module_utils whose CHECK_* constants name checks a module of that role's pre-flight makes on the host.
NAMED_CHECK_SOURCES = {'service': [os.path.join(ROOT, "plugins", "module_utils", "_service_preflight.py"),
                                   os.path.join(ROOT, "plugins", "module_utils", "_plans", "service.py"),
                                   os.path.join(ROOT, "plugins", "module_utils", "_plans", "service_host.py"),
                                   os.path.join(ROOT, "plugins", "module_utils", "_plans", "service_model.py")],
                       'cuda_env': [os.path.join(ROOT, "plugins", "module_utils", "_plans", "cuda_env.py")],
                       'cutover': [os.path.join(ROOT, "plugins", "module_utils", "_plans", "cutover_host.py")]}


def tasks(items):
    """Every task of a task list, blocks flattened."""
    for task in items or []:
        if not isinstance(task, dict):
            continue
        if "block" in task:
            for key in ("block", "rescue", "always"):
                yield from tasks(task.get(key))
        else:
            yield task


def role_of(path):
    return os.path.relpath(path, os.path.join(ROOT, "roles")).split(os.sep)[0]


def is_check(task):
    return any(key in ("assert", "ansible.builtin.assert") or key.startswith("inferops.sglang.") for key in task)


def checks():
    """(role, task name) of every pre-flight check."""
    found = []
    for path in CHECK_FILES:
        with open(path) as handle:
            found.extend((role_of(path), task["name"]) for task in tasks(yaml.safe_load(handle)) if is_check(task))
    return found


def named_checks():
    """(role, check name) of every check run inside one pre-flight task (see the module docstring)."""
    found = []
    for path in CHECK_FILES:
        with open(path) as handle:
            for task in tasks(yaml.safe_load(handle)):
                for key, value in (task.get("vars") or {}).items():
                    if key.endswith("_checks") and isinstance(value, dict):
                        found.extend((role_of(path), name) for name in value)
    for role, paths in sorted(NAMED_CHECK_SOURCES.items()):
        for path in paths:
            with open(path) as handle:
                found.extend((role, match[1]) for match in re.findall(r"""^CHECK_\w+ = (['"])(.+)\1$""", handle.read(), re.M))
    return found


def page():
    with open(PAGE) as handle:
        return handle.read()


def test_the_checks_are_found():
    assert len(checks()) + len(named_checks()) > 30, (checks(), named_checks())


def test_every_named_check_has_an_entry():
    text = page()
    names = named_checks()
    assert len(names) >= 20, names
    missing = ["[%s : %s]" % check for check in names if "``[%s]``" % check[1] not in text]
    assert not missing, "no troubleshooting entry in %s for the named checks:\n%s" % (PAGE, "\n".join(missing))


def test_every_named_entry_names_an_existing_check():
    names = set(name for dummy_role, name in named_checks())
    stale = [name for name in NAMED_ENTRY.findall(page()) if name not in names]
    assert not stale, "troubleshooting entries for named checks that do not exist (renamed?):\n%s" % "\n".join(stale)


def test_every_preflight_check_has_an_entry():
    text = page()
    missing = ["TASK [inferops.sglang.%s : %s]" % check for check in checks()
               if "TASK [inferops.sglang.%s : %s]" % check not in text]
    assert not missing, "no troubleshooting entry in %s for:\n%s" % (PAGE, "\n".join(missing))


def test_every_entry_names_an_existing_task():
    names = {}
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "**", "*.yml"), recursive=True):
        with open(path) as handle:
            names.setdefault(role_of(path), set()).update(
                task.get("name") for task in tasks(yaml.safe_load(handle)))
    stale = ["%s : %s" % (role, name) for role, name in HEADER.findall(page()) if name not in names.get(role, ())]
    assert not stale, "troubleshooting entries for tasks that do not exist (renamed?):\n%s" % "\n".join(stale)


def test_every_gpu_blocker_kind_has_an_entry():
    with open(os.path.join(ROOT, "plugins", "module_utils", "_nvidia_smi.py")) as handle:
        source = handle.read()
    body = source.split("\ndef gpu_blockers(", 1)[1].split("\ndef ", 1)[0]
    kinds = sorted(set(re.findall(r"'kind': '(\w+)'", body)))
    assert len(kinds) >= 5, kinds
    text = page()
    missing = [kind for kind in kinds if "``%s``" % kind not in text]
    assert not missing, "GPU blocker kinds without an entry: %s" % missing
