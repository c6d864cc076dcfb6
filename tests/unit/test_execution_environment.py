"""The execution environment definition (meta/execution-environment.yml) declares exactly the Python packages that
the modules, module_utils and plugins import: everything plugins/ imports that is neither the standard library nor
ansible (ansible-core or this collection) must be in its requirements file, and nothing else."""

import ast
import glob
import os
import re
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EE_FILE = os.path.join(ROOT, "meta", "execution-environment.yml")
THIS_COLLECTION = "ansible_collections.inferops.sglang"
# Import name -> distribution name, where they differ (extend when a plugin imports such a package).
DISTRIBUTIONS = {"yaml": "pyyaml", "dateutil": "python-dateutil", "OpenSSL": "pyopenssl"}


def load_ee():
    with open(EE_FILE) as handle:
        return yaml.safe_load(handle)


def plugin_files():
    files = sorted(glob.glob(os.path.join(ROOT, "plugins", "**", "*.py"), recursive=True))
    assert files
    return files


def imports(path):
    """Top-level names of the absolute imports of a file, wherever they are (functions, try blocks included)."""
    with open(path, "rb") as handle:
        tree = ast.parse(handle.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module)
    return names


def third_party(name):
    top = name.split(".")[0]
    if top in ("__future__", "ansible") or top in sys.stdlib_module_names:
        return None
    if top == "inferops_sglang_secrets":  # _server_log's import on the server: the copy of _secrets the service installs
        return None
    if top == "ansible_collections":
        assert name == THIS_COLLECTION or name.startswith(THIS_COLLECTION + "."), \
            "%s comes from another collection: it belongs in galaxy.yml dependencies" % name
        return None
    return DISTRIBUTIONS.get(top, top)


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(path):
    names = set()
    with open(path) as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            assert not line.startswith("-"), "%s: options and nested files are not supported here: %s" % (path, line)
            names.add(canonical(re.split(r"[\s\[<>=!~;@]", line, maxsplit=1)[0]))
    return names


def test_definition_is_version_3_with_relative_files_that_exist():
    ee = load_ee()
    assert ee["version"] == 3
    dependencies = ee["dependencies"]
    # A collection contributes Python and system packages; images, ansible_core and galaxy are the image's business.
    assert set(dependencies) <= {"python", "system"}, sorted(dependencies)
    for kind, value in dependencies.items():
        if isinstance(value, str):
            assert not os.path.isabs(value), "ansible-builder wants %s relative to the collection root" % kind
            assert os.path.isfile(os.path.join(ROOT, value)), value
            assert value.split("/")[0] == "meta", "%s: keep it under meta/, which the tarball ships" % value


def test_python_requirements_are_exactly_what_plugins_import():
    needed = {}
    for path in plugin_files():
        for name in imports(path):
            dist = third_party(name)
            if dist:
                needed.setdefault(canonical(dist), []).append(os.path.relpath(path, ROOT))
    python = load_ee()["dependencies"].get("python")
    if python is None:
        declared = set()
    elif isinstance(python, list):
        declared = {canonical(re.split(r"[\s\[<>=!~;@]", line, maxsplit=1)[0]) for line in python}
    else:
        declared = requirement_names(os.path.join(ROOT, python))
    assert sorted(set(needed) - declared) == [], "imported by plugins/ but not declared: %s" % needed
    assert sorted(declared - set(needed)) == [], "declared but imported by nothing in plugins/"


def test_plugins_need_nothing_beyond_the_standard_library_today():
    """The state the EE files describe: no third-party import at all, so the requirements file lists nothing."""
    found = sorted({third_party(name) for path in plugin_files() for name in imports(path)} - {None})
    assert found == []
    assert requirement_names(os.path.join(ROOT, "meta", "ee-requirements.txt")) == set()
