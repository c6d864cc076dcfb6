"""What the collection's metadata says, and what its files really use: the one place the packaging tests (and the
rewrite of meta/ee/requirements.yml) read them from.

- galaxy(): galaxy.yml; requires_ansible(): meta/runtime.yml; core_releases(): the ansible-core releases that
  scripts/ansible-test.sh --core installs (CORE_RELEASES), one per claimed line.
- used_plugins(): every fully qualified plugin name the roles, playbooks and plugins use, by kind (module, filter,
  test, lookup, connection, become, ...), found where Ansible itself would resolve them (task keywords, Jinja filters,
  tests and lookups, connection and become settings, role and playbook references, Python imports).
- ee_requirements_text(): meta/ee/requirements.yml as galaxy.yml makes it.
"""

import ast
import glob
import os
import re

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
THIS = "inferops.sglang"
# Collections every ansible-core has; nothing to declare for them.
CORE_COLLECTIONS = {"ansible.builtin", "ansible.legacy"}

_PART = r"[a-z][a-z0-9_]*"
FQCN = r"%s\.%s\.%s(?:\.%s)*" % (_PART, _PART, _PART, _PART)
_JINJA = [
    ("filter", re.compile(r"\|\s*(%s)" % FQCN)),
    ("test", re.compile(r"\bis\s+(?:not\s+)?(%s)" % FQCN)),
    ("lookup", re.compile(r"\b(?:lookup|query|q)\(\s*['\"](%s)['\"]" % FQCN)),
]
_WHOLE = re.compile(r"^%s$" % FQCN)
# Keywords and variables whose value names a plugin, and the plugin type it names.
_VALUE_KINDS = {
    "connection": "connection", "ansible_connection": "connection",
    "become_method": "become", "ansible_become_method": "become",
    "strategy": "strategy",
    "import_playbook": "playbook", "ansible.builtin.import_playbook": "playbook",
}
_ROLE_ACTIONS = {"import_role", "include_role", "ansible.builtin.import_role", "ansible.builtin.include_role"}


def load_yaml(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def galaxy():
    return load_yaml(os.path.join(ROOT, "galaxy.yml"))


def requires_ansible():
    return load_yaml(os.path.join(ROOT, "meta", "runtime.yml"))["requires_ansible"]


def core_releases():
    """The releases of scripts/ansible-test.sh's CORE_RELEASES, e.g. ['2.16.19', ..., '2.21.5']."""
    with open(os.path.join(ROOT, "scripts", "ansible-test.sh")) as handle:
        found = re.search(r'^CORE_RELEASES="([^"]+)"$', handle.read(), re.M)
    assert found, "scripts/ansible-test.sh has no CORE_RELEASES line"
    return found.group(1).split()


def line_of(release):
    return ".".join(release.split(".")[:2])


def collection_of(fqcn):
    return ".".join(fqcn.split(".")[:2])


def _scan_text(text, found, where):
    for kind, pattern in _JINJA:
        for match in pattern.finditer(text):
            found.setdefault((kind, match.group(1)), set()).add(where)


def _walk(node, found, where, parent_key=None):
    if isinstance(node, dict):
        for key, value in node.items():
            key = str(key)
            if _WHOLE.match(key):
                # A task action (module or action plugin), or a role/playbook reference keyword spelled in full.
                found.setdefault(("module", key), set()).add(where)
            if key in _VALUE_KINDS and isinstance(value, str) and _WHOLE.match(value):
                found.setdefault((_VALUE_KINDS[key], value), set()).add(where)
            if key in _ROLE_ACTIONS:
                name = value.get("name") if isinstance(value, dict) else value
                if isinstance(name, str) and _WHOLE.match(name):
                    found.setdefault(("role", name), set()).add(where)
            if key == "roles" and isinstance(value, list):
                for role in value:
                    name = role.get("role", role.get("name")) if isinstance(role, dict) else role
                    if isinstance(name, str) and _WHOLE.match(name):
                        found.setdefault(("role", name), set()).add(where)
            if key == "collections" and isinstance(value, list):
                for name in value:
                    found.setdefault(("collections keyword", str(name) + ".*"), set()).add(where)
            _walk(value, found, where, key)
    elif isinstance(node, list):
        for item in node:
            _walk(item, found, where, parent_key)
    elif isinstance(node, str):
        _scan_text(node, found, where)


def _python_uses(path, found, where):
    with open(path, "rb") as handle:
        tree = ast.parse(handle.read(), path)
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "ansible_collections" and len(parts) >= 3:
                found.setdefault(("python import", ".".join(parts[1:3]) + ".*"), set()).add(where)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "extends_documentation_fragment" in node.value:
            doc = yaml.safe_load(node.value) or {}
            fragments = doc.get("extends_documentation_fragment") or []
            for fragment in [fragments] if isinstance(fragments, str) else fragments:
                found.setdefault(("doc_fragment", fragment), set()).add(where)


def scan_yaml_text(text, where="<text>"):
    """The uses in one YAML document's text: {(kind, fqcn): {where}}."""
    found = {}
    _walk(yaml.safe_load(text), found, where)
    return found


def used_plugins():
    """{(kind, fqcn): {relative paths}} for roles/, playbooks/ (YAML and Jinja templates) and plugins/ (Python)."""
    found = {}
    for top in ("roles", "playbooks"):
        for path in sorted(glob.glob(os.path.join(ROOT, top, "**", "*"), recursive=True)):
            where = os.path.relpath(path, ROOT)
            if path.endswith((".yml", ".yaml")):
                with open(path) as handle:
                    _walk(yaml.safe_load(handle), found, where)
            elif path.endswith(".j2"):
                with open(path) as handle:
                    _scan_text(handle.read(), found, where)
    for path in sorted(glob.glob(os.path.join(ROOT, "plugins", "**", "*.py"), recursive=True)):
        _python_uses(path, found, os.path.relpath(path, ROOT))
    return found


def used_collections(found=None):
    """{collection: [fqcn or what names it, ...]} of the collections other than this one and ansible-core's."""
    uses = {}
    for (kind, name) in (used_plugins() if found is None else found):
        collection = collection_of(name)
        if collection not in CORE_COLLECTIONS and collection != THIS:
            uses.setdefault(collection, []).append("%s %s" % (kind, name))
    return {collection: sorted(names) for collection, names in uses.items()}


def ee_requirements_text():
    """meta/ee/requirements.yml as galaxy.yml makes it: this collection at its version, then its dependencies."""
    meta = galaxy()
    dependencies = meta.get("dependencies") or {}
    described = ", ".join(sorted(dependencies)) if dependencies else "none today: it uses only ansible.builtin"
    lines = [
        "---",
        "# Collections of the execution environment meta/ee/execution-environment.yml: %s.%s at galaxy.yml's version"
        % (meta["namespace"], meta["name"]),
        "# and the collections galaxy.yml says it depends on (%s)." % described,
        "# Generated from galaxy.yml: python tests/packaging/test_execution_environment.py --write",
        "# (the test fails when this file and galaxy.yml disagree). From a tarball instead of a Galaxy server, use",
        "#   - name: /path/to/%s-%s-%s.tar.gz" % (meta["namespace"], meta["name"], meta["version"]),
        "#     type: file",
        "collections:",
        "  - name: %s.%s" % (meta["namespace"], meta["name"]),
        "    version: ==%s" % meta["version"],
    ]
    for name, spec in sorted(dependencies.items()):
        lines += ["  - name: %s" % name, "    version: \"%s\"" % spec]
    return "\n".join(lines) + "\n"
