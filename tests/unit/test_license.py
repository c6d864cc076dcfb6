"""The collection is GPL-3.0-or-later, as galaxy.yml says, and every file under plugins/ carries the GPL-3.0+ header
near its top (ansible-test's validate-modules checks it for modules only)."""

import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HEADER = "GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)"


def plugin_files():
    found = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "plugins")):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        found.extend(os.path.join(dirpath, f) for f in filenames if not f.endswith(".pyc"))
    # An empty __init__.py holds nothing to license (and ansible-test sanity's empty-init wants it empty).
    found = [path for path in found if not (os.path.basename(path) == "__init__.py" and os.path.getsize(path) == 0)]
    assert found
    return sorted(found)


def test_galaxy_yml_says_gpl3_or_later():
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        galaxy = yaml.safe_load(handle)
    assert galaxy["license"] == ["GPL-3.0-or-later"]
    assert "license_file" not in galaxy


def test_every_plugin_file_carries_the_header():
    missing = []
    for path in plugin_files():
        with open(path, encoding="utf-8") as handle:
            head = [next(handle, "") for dummy in range(10)]
        if not any(HEADER in line and line.lstrip().startswith("#") for line in head) or \
                not any("SPDX-License-Identifier: GPL-3.0-or-later" in line for line in head):
            missing.append(os.path.relpath(path, ROOT))
    assert missing == [], "without the GPL-3.0+ header in the first 10 lines: %s" % missing
