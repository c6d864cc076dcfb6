"""Docs mistakes that crept in once (issue 30, item 4) and must not come back:

* two entry points of one role sharing a title or a text (the known_good role's save/restore/select and the service
  role's preflight/deployed were YAML aliases of main: ansible-doc showed each with main's "Read the last known-good"
  or "Render the SGLang server"); sharing the options (an alias of main's options) is fine;
* a module of plugins/modules missing from the README's list of modules (it listed 10 of 14).

Run by scripts/test.sh's docs stage (python -m pytest tests/docs)."""

import glob
import itertools
import os
import re

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPECS = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")))


def text(value):
    """A description (str or list of str) as one whitespace-normalised text."""
    if isinstance(value, list):
        value = " ".join(str(item) for item in value)
    return " ".join(str(value or "").split())


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.split(os.sep)[-3])
def test_no_two_entry_points_share_a_title_or_a_text(spec):
    with open(spec) as handle:
        entry_points = yaml.safe_load(handle)["argument_specs"]
    assert all(entry.get("short_description") for entry in entry_points.values()), "an entry point has no title"
    for (name_a, a), (name_b, b) in itertools.combinations(sorted(entry_points.items()), 2):
        assert text(a.get("short_description")) != text(b.get("short_description")), \
            "%s and %s share the title %r" % (name_a, name_b, a.get("short_description"))
        assert text(a.get("description")) != text(b.get("description")), \
            "%s and %s share their description" % (name_a, name_b)


def test_the_readme_lists_every_module():
    modules = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))
                     if not os.path.basename(p).startswith("_"))
    with open(os.path.join(ROOT, "README.md")) as handle:
        readme = handle.read()
    listed = set(re.findall(r"`(\w+)`", readme))
    assert modules and [m for m in modules if m not in listed] == []
