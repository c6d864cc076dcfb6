"""ansible-doc renders every module of plugins/modules and every role with meta/argument_specs.yml, without an
error or a warning, from the copy of the collection that ANSIBLE_COLLECTIONS_PATH resolves.

Run by scripts/test.sh's docs stage (python -m pytest tests/docs) with the .venv's ansible-doc."""

import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COLLECTION = "inferops.sglang"
MODULES = sorted(os.path.splitext(os.path.basename(p))[0]
                 for p in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))
                 if not os.path.basename(p).startswith("_"))
ROLES = sorted(os.path.basename(os.path.dirname(os.path.dirname(p)))
               for p in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")))
# Lines ansible-doc prints on stderr (or stdout) when something is wrong with a documentation block.
PROBLEMS = ("[WARNING]", "[ERROR]", "ERROR!", "[DEPRECATION WARNING]", "Traceback", "could not parse")


def ansible_doc():
    beside = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    return beside if os.path.exists(beside) else shutil.which("ansible-doc")


def run(*args):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_DEPRECATION_WARNINGS="1",
               PAGER="cat", COLUMNS="120")
    proc = subprocess.run([ansible_doc(), *args], capture_output=True, text=True, env=env, timeout=120, check=False)
    problems = [line for line in (proc.stdout + proc.stderr).splitlines() if any(p in line for p in PROBLEMS)]
    assert proc.returncode == 0 and not problems, "ansible-doc %s: rc %d\n%s\n%s" % (
        " ".join(args), proc.returncode, proc.stderr, "\n".join(problems))
    return proc.stdout


pytestmark = pytest.mark.skipif(ansible_doc() is None, reason="no ansible-doc")


def test_the_collection_has_modules_and_roles():
    assert MODULES and ROLES


@pytest.mark.parametrize("module", MODULES)
def test_module_renders(module):
    name = "%s.%s" % (COLLECTION, module)
    text = run("-t", "module", name)
    assert name in text.splitlines()[0]
    for section in ("OPTIONS", "AUTHOR", "EXAMPLES", "RETURN"):
        assert section in text, "%s: no %s section" % (name, section)
    data = json.loads(run("-t", "module", "--json", name))[name]
    assert data["doc"]["short_description"] and data["doc"]["description"]
    assert data["examples"].strip(), "%s has no EXAMPLES" % name


@pytest.mark.parametrize("role", ROLES)
def test_role_renders(role):
    name = "%s.%s" % (COLLECTION, role)
    text = run("-t", "role", name)
    assert re.search(r"ENTRY POINT: \*?main\*? - ", text), text[:300]
    data = json.loads(run("-t", "role", "--json", name))[name]
    options = data["entry_points"]["main"]["options"]
    assert options and all(spec.get("description") for spec in options.values()), role


def test_listing_shows_every_module_and_role():
    listed = json.loads(run("-t", "module", "--list", "--json", COLLECTION))
    assert sorted(listed) == ["%s.%s" % (COLLECTION, m) for m in MODULES]
    roles = json.loads(run("-t", "role", "--list", "--json", COLLECTION))
    assert sorted(roles) == ["%s.%s" % (COLLECTION, r) for r in ROLES]
