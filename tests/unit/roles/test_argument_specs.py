"""Every role variable is declared in both defaults/main.yml and meta/argument_specs.yml, with the same default,
a type that the default really has, and choices that hold it; every entry point is a tasks file of the role."""

import glob
import os

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLES = sorted(os.path.basename(os.path.dirname(os.path.dirname(p)))
               for p in glob.glob(os.path.join(ROOT, "roles", "*", "defaults", "main.yml")))

# What a value of each declared type is, strictly: Ansible would convert "1" to an int or "yes" to a bool at run
# time, but a default that needs a conversion is a mismatch between defaults/main.yml and the spec.
STRICT_TYPES = {
    "str": lambda v: isinstance(v, str),
    "path": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict),
    "raw": lambda v: True,
}
SPEC_KEYS = {"type", "description", "default", "choices", "elements", "options", "required", "version_added",
             "no_log", "aliases", "apply_defaults"}


def load(role, *parts):
    with open(os.path.join(ROOT, "roles", role, *parts)) as handle:
        return yaml.safe_load(handle) or {}


def templated(value):
    return isinstance(value, str) and "{{" in value


def check_type(name, spec, value):
    kind = spec["type"]
    assert kind in STRICT_TYPES, "%s: unknown type %r" % (name, kind)
    assert STRICT_TYPES[kind](value), "%s: the default %r is not of the declared type %s" % (name, value, kind)
    if kind == "list":
        if "elements" in spec:
            for item in value:
                check_type(name + "[]", {"type": spec["elements"], "options": spec.get("options", {})}, item)
        else:
            assert not value, "%s: a non-empty list default needs 'elements'" % name
    if kind == "dict" and spec.get("options"):
        for key, item in value.items():
            assert key in spec["options"], "%s: key %s of the default is not a declared suboption" % (name, key)
            check_type("%s.%s" % (name, key), spec["options"][key], item)


@pytest.mark.parametrize("role", ROLES)
def test_defaults_and_argument_specs_agree(role):
    defaults = load(role, "defaults", "main.yml")
    options = load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert sorted(defaults) == sorted(options), "defaults/main.yml and meta/argument_specs.yml disagree"
    for name, spec in options.items():
        assert name.startswith(role + "_"), "%s is not prefixed with the role name" % name
        assert spec.get("description"), "%s has no description" % name
        assert "type" in spec, "%s has no type" % name
        assert not set(spec) - SPEC_KEYS, "%s: unknown keys %s" % (name, sorted(set(spec) - SPEC_KEYS))
        assert not spec.get("required"), "%s has a default in defaults/main.yml, so it is not required" % name
        default = defaults[name]
        if templated(default):
            # A templated default (derived from facts or another role): the spec cannot hold it, since
            # validate_argument_spec templates the spec before the other roles ran; the description says it.
            assert "default" not in spec, name
            assert "efault" in spec["description"] if isinstance(spec["description"], str) else \
                any("efault" in line for line in spec["description"]), name
            continue
        assert spec.get("default") == default, "default of %s differs" % name
        check_type(name, spec, default)
        if "choices" in spec:
            values = default if spec["type"] == "list" else [default]
            for value in values:
                assert value in spec["choices"], "%s: %r is not one of the choices" % (name, value)


@pytest.mark.parametrize("role", ROLES)
def test_ansible_accepts_the_defaults(role):
    """What validate_argument_spec does at the start of the role, fed with the (non-templated) defaults."""
    defaults = {k: v for k, v in load(role, "defaults", "main.yml").items() if not templated(v)}
    options = load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    result = ArgumentSpecValidator(options).validate(defaults)
    assert not result.error_messages, result.error_messages


@pytest.mark.parametrize("role", ROLES)
def test_every_entry_point_is_a_tasks_file(role):
    specs = load(role, "meta", "argument_specs.yml")["argument_specs"]
    defaults = load(role, "defaults", "main.yml")
    assert "main" in specs
    for entry_point, spec in specs.items():
        assert os.path.isfile(os.path.join(ROOT, "roles", role, "tasks", entry_point + ".yml")), entry_point
        assert spec.get("short_description"), "%s: entry point %s has no short_description" % (role, entry_point)
        unknown = set(spec.get("options", {})) - set(defaults)
        assert not unknown, "%s: entry point %s declares variables without defaults: %s" % (role, entry_point, unknown)


def test_every_role_has_a_spec():
    assert ROLES == ["cuda_env", "cutover", "facts", "fleet", "known_good", "router", "service"]
