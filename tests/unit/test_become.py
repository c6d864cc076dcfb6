"""Privilege escalation (issue 13, item 2): the plays connect as an SSH user with sudo, the controller never uses it.

- Every play in playbooks/*.yml escalates with `become: "{{ inferops_sglang_become | default(true) }}"`, so that an
  operator who connects as root can switch it off (-e inferops_sglang_become=false).
- Every task that runs on the controller (delegate_to: localhost, local_action, or a play on localhost), in every task
  file of the roles and every playbook, has `become: false` (on itself or an enclosing block/play): the controller
  is the operator's own machine, where sudo may ask for a password or be missing, and writing the fleet summary as
  root would leave files the operator cannot change.
"""

import glob
import os

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PLAY_BECOME = "{{ inferops_sglang_become | default(true) }}"
CONTROLLER = ("localhost", "127.0.0.1", "::1")
BLOCK_KEYS = ("block", "rescue", "always")
PLAY_TASK_KEYS = ("pre_tasks", "tasks", "post_tasks", "handlers")


def relative(path):
    return os.path.relpath(path, ROOT)


def task_files():
    files = glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "**", "*.yml"), recursive=True)
    files += glob.glob(os.path.join(ROOT, "roles", "*", "handlers", "**", "*.yml"), recursive=True)
    return sorted(relative(path) for path in files)


def playbooks():
    return sorted(relative(path) for path in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))


def load(path):
    with open(os.path.join(ROOT, path)) as handle:
        return yaml.safe_load(handle) or []


def on_controller(task):
    """True when the task runs on the controller by delegation."""
    return "local_action" in task or str(task.get("delegate_to", "")).strip() in CONTROLLER


def walk(tasks, become, where):
    """Yield (where, task, effective become) for every task, through blocks; become is inherited from enclosing
    blocks (None: not set)."""
    for index, task in enumerate(tasks or []):
        here = "%s[%d] %s" % (where, index, task.get("name", "(unnamed)"))
        mine = task.get("become", become)
        if any(key in task for key in BLOCK_KEYS):
            for key in BLOCK_KEYS:
                yield from walk(task.get(key), mine, here + " " + key)
        else:
            yield here, task, mine


def controller_tasks_without_become_false(tasks, become, where):
    return [here for here, task, mine in walk(tasks, become, where) if on_controller(task) and mine is not False]


def test_the_walk_finds_a_delegated_task_in_a_rescue_and_honours_an_enclosing_block():
    """The checker itself: a delegated task is found in a rescue, and become: false on its block counts."""
    tasks = [{"name": "outer", "block": [{"name": "a", "debug": None}],
              "rescue": [{"name": "b", "copy": {}, "delegate_to": "localhost"}]},
             {"name": "ok", "become": False, "block": [{"name": "c", "copy": {}, "delegate_to": "127.0.0.1"}]},
             {"name": "d", "local_action": {"module": "copy"}}]
    assert controller_tasks_without_become_false(tasks, None, "t") == ["t[0] outer rescue[0] b", "t[2] d"]


@pytest.mark.parametrize("path", task_files())
def test_a_role_task_on_the_controller_does_not_use_sudo(path):
    tasks = load(path)
    assert isinstance(tasks, list), path
    missing = controller_tasks_without_become_false(tasks, None, path)
    assert not missing, "tasks delegated to the controller without `become: false`: %s" % missing


@pytest.mark.parametrize("path", playbooks())
def test_every_play_escalates_overridably_and_never_on_the_controller(path):
    for index, play in enumerate(load(path)):
        if "import_playbook" in play:
            continue
        where = "%s play %d (%s)" % (path, index, play.get("name", "unnamed"))
        if str(play.get("hosts", "")).strip() in CONTROLLER:
            assert play.get("become") is False, "%s runs on the controller: it needs `become: false`" % where
            continue
        assert play.get("become") == PLAY_BECOME, "%s needs `become: \"%s\"`" % (where, PLAY_BECOME)
        assert "become_user" not in play, "%s: escalate to root (the default), not to another user" % where
        for key in PLAY_TASK_KEYS:
            missing = controller_tasks_without_become_false(play.get(key), play.get("become"), where + " " + key)
            assert not missing, "tasks delegated to the controller without `become: false`: %s" % missing
