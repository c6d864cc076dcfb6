"""Every role variable is declared in both defaults/main.yml and meta/argument_specs.yml, with the same default."""

import glob
import os

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLES = sorted(os.path.basename(os.path.dirname(os.path.dirname(p)))
               for p in glob.glob(os.path.join(ROOT, "roles", "*", "defaults", "main.yml")))


def load(role, *parts):
    with open(os.path.join(ROOT, "roles", role, *parts)) as handle:
        return yaml.safe_load(handle) or {}


@pytest.mark.parametrize("role", ROLES)
def test_defaults_and_argument_specs_agree(role):
    defaults = load(role, "defaults", "main.yml")
    options = load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert sorted(defaults) == sorted(options), "defaults/main.yml and meta/argument_specs.yml disagree"
    for name, spec in options.items():
        assert name.startswith(role + "_"), "%s is not prefixed with the role name" % name
        assert spec.get("description"), "%s has no description" % name
        assert "type" in spec, "%s has no type" % name
        default = defaults[name]
        if isinstance(default, str) and "{{" in default:
            # A templated default (derived from facts or another role): the spec cannot hold it, since
            # validate_argument_spec templates the spec before the other roles ran; the description says it.
            assert "default" not in spec, name
            assert "efault" in spec["description"] if isinstance(spec["description"], str) else \
                any("efault" in line for line in spec["description"]), name
            continue
        assert spec.get("default") == default, "default of %s differs" % name
        if "choices" in spec:
            assert default in spec["choices"], name


def test_every_role_has_a_spec():
    assert ROLES == ["cuda_env", "cutover", "facts", "service"]
