"""The page "Logs and where things live" (docs/docsite/rst/paths.rst) gives each path with the variable that moves it.
For every role variable the page names whose default is a literal absolute path, that default must be on the page (as
a literal, or as the start of one): a changed default in roles/*/defaults/main.yml fails here until the page follows.

Run by scripts/test.sh's docs stage (python -m pytest tests/docs)."""

import glob
import os
import re

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PAGE = os.path.join(ROOT, "docs", "docsite", "rst", "paths.rst")


def path_defaults():
    """{variable: default} for every role default that is a literal absolute path (no Jinja)."""
    found = {}
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "defaults", "main.yml")):
        with open(path) as handle:
            for name, value in (yaml.safe_load(handle) or {}).items():
                if isinstance(value, str) and value.startswith("/") and "{{" not in value:
                    found[name] = value
    return found


def test_the_page_names_role_variables():
    with open(PAGE) as handle:
        named = set(re.findall(r"``(\w+)``", handle.read())) & set(path_defaults())
    assert len(named) >= 10, sorted(named)


def test_every_named_path_variable_has_its_default_on_the_page():
    with open(PAGE) as handle:
        text = handle.read()
    defaults = path_defaults()
    named = set(re.findall(r"``(\w+)``", text)) & set(defaults)
    wrong = ["%s: %s" % (name, defaults[name]) for name in sorted(named)
             if not re.search(r"``%s(/[^`]*)?``" % re.escape(defaults[name].rstrip("/")), text)]
    assert not wrong, "paths.rst names these variables but not their defaults:\n%s" % "\n".join(wrong)
