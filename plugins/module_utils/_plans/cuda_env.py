# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The cuda_env role's decisions, as pure functions (filters cuda_env_plan, cuda_env_secrets)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils._python_probe import spawn_env_missing
from ansible_collections.inferops.sglang.plugins.module_utils._secrets import redact_env
from ansible_collections.inferops.sglang.plugins.module_utils._server_args import invalid_environment
from ansible_collections.inferops.sglang.plugins.module_utils._plans.problems import problem as _problem
from ansible_collections.inferops.sglang.plugins.module_utils._plans.values import as_dict as _as_dict, truth


def cuda_env_secrets(settings):
    """The variables of the CUDA/NCCL environment that look like secrets (by the name, or a password in a URL of the
    value; the rule of ``_secrets.redact_env``): they would be written to files every local user can read.

    :param settings: dict of role variable name (``cuda_env_variables``, ``cuda_env_nccl``, ``cuda_env_extra``) to
        its dict of environment variables, in the order to report them.
    :returns: list of ``setting.NAME`` strings (empty: none); never a value.
    :raises TypeError: when a setting is not a mapping.
    """
    found = []
    for setting, env in settings.items():
        if not hasattr(env, 'items'):
            raise TypeError('%s: expected a mapping of environment variables, got %s' % (setting, type(env).__name__))
        found.extend('%s.%s' % (setting, name) for name in redact_env(env)[1])
    return found


CUDA_ENV_MARKER = '# {mark} inferops.sglang managed block: CUDA/NCCL environment'

# The checks of the pre-flight, by the name each problem carries (one troubleshooting entry each).
CHECK_FACTS = 'Check that host facts were gathered'
CHECK_IMPORT = "Refuse a sitecustomize.py the server's interpreter cannot import"
CHECK_CUDA_HOME = 'Check CUDA_HOME'
CHECK_ENV = 'Check environment variable names and values'
CHECK_SECRETS = 'Refuse secrets in the CUDA/NCCL environment'
CHECK_LOCATION = 'Check that a sitecustomize.py location is known'
CHECK_TOOLS = 'Require nvcc and ptxas in CUDA_HOME'
CHECK_FILE = 'Require a file (or a new file in an existing directory) for the block'
CHECK_MARKERS = 'Require balanced markers of the managed block'
CHECK_SPAWN = 'Require every variable in the spawned child'


def _input(inputs, name, default=None):
    """``inputs[name]``, or ``inputs['cuda_env_' + name]`` (role variable names may keep their prefix)."""
    if name in inputs:
        return inputs[name]
    return inputs.get('cuda_env_' + name, default)


def cuda_env_environment(cuda_home, variables=None, nccl=None, extra=None):
    """The CUDA/NCCL environment the role lays down: ``CUDA_HOME`` and ``TRITON_PTXAS_PATH`` (``CUDA_HOME/bin/ptxas``),
    then ``variables``, ``nccl`` and ``extra`` over them, in that order (a later one wins).

    :returns: dict of name -> value (values as given; the pre-flight refuses what is not text).
    """
    environment = {'CUDA_HOME': cuda_home, 'TRITON_PTXAS_PATH': '%s/bin/ptxas' % cuda_home}
    for layer in (variables, nccl, extra):
        environment.update(layer or {})
    return environment


def _sitecustomize(facts):
    """The sitecustomize.py the interpreter imports (``realpath``: symlinks resolved), else where it would import a new
    one from (host_facts' ``candidate``), else ``''``."""
    found = _as_dict(_as_dict(facts.get('python')).get('sitecustomize'))
    return str(found.get('realpath') or found.get('candidate') or '')


def _spawn_problem(plan, spawn):
    """The problem of a spawned child (module cuda_env_state's ``spawn``: ``stdout``, ``stderr``) that does not see every
    variable of the environment, or None."""
    spawn = _as_dict(spawn)
    missing = spawn_env_missing(spawn.get('stdout'), plan['environment'])
    if not missing:
        return None
    stderr = str(spawn.get('stderr') or '').strip()
    return _problem(CHECK_SPAWN, 'A child process spawned by %s (as SGLang starts its schedulers), from a clean environment%s, '
                                 'does not see %s although the block was written into %s: that interpreter does not '
                                 'import this file at start-up%s. Check facts_python and the PYTHONPATH the server runs '
                                 'with (facts_pythonpath).'
                    % (plan['python'], (' with PYTHONPATH=' + plan['pythonpath']) if plan['pythonpath'] else '',
                       ', '.join(missing), plan['sitecustomize'], (' (%s)' % stderr.splitlines()[-1]) if stderr else ''))


def _state_problems(plan, cuda_home, facts, state, manage):
    """The problems of what the one host read (module cuda_env_state) found; with everything current (nothing to
    write), also what its spawned child saw."""
    problems = []
    tools = _as_dict(state.get('tools'))
    if not all(tools.values()):
        seen = ', '.join(_as_dict(t).get('path', '') for t in _as_dict(facts.get('cuda')).get('toolkits') or []) or 'none'
        problems.append(_problem(CHECK_TOOLS, '%s lacks bin/nvcc or bin/ptxas. Set cuda_env_cuda_home to the CUDA toolkit '
                                              'the server uses (toolkits seen: %s).' % (cuda_home, seen)))
    site = _as_dict(state.get('sitecustomize'))
    if manage and site:
        if not site.get('dir_isdir') or (site.get('exists') and not site.get('isreg')):
            what = ('a directory' if site.get('isdir') else
                    'missing its directory' if not site.get('dir_isdir') else 'not a regular file')
            problems.append(_problem(CHECK_FILE, '%s must be a regular file, or not exist in an existing directory (it is '
                                                 '%s). Nothing was changed.' % (plan['sitecustomize'], what)))
        if site.get('marker_problem'):
            problems.append(_problem(CHECK_MARKERS, '%s: %s, so that one block remains (or none: it is written anew). '
                                                    'Nothing was changed.' % (plan['sitecustomize'], site['marker_problem'])))
    if manage and truth(state.get('current', False)) and hasattr(state.get('spawn'), 'get'):
        spawned = _spawn_problem(plan, state['spawn'])
        if spawned:
            problems.append(spawned)
    return problems


def cuda_env_plan(inputs, facts, state=None):
    """The cuda_env role's values and every pre-flight problem at once (filter ``cuda_env_plan``).

    The role calls it before its one host read (``state`` None: the checks of the inputs and the facts) and again with
    that read (the toolkit's tools, the sitecustomize.py and its markers).

    :param inputs: the role's variables, with or without their ``cuda_env_`` prefix: ``cuda_home`` (str),
        ``variables``, ``nccl``, ``extra`` (dicts of environment variables), ``manage_sitecustomize`` (bool),
        ``env_file`` (str).
    :param facts: host facts (module host_facts); ``init`` tells they were gathered.
    :param state: the result of module cuda_env_state (``tools``: name -> bool; ``sitecustomize``: ``exists``,
        ``isreg``, ``isdir``, ``dir_isdir``, ``marker_problem``), or None before it ran.
    :returns: dict with ``manage_sitecustomize`` (bool, Ansible's truth rule: the role's tasks read this, not the
        variable, so ``'false'`` from ``-e`` means false everywhere), ``environment`` (name -> value), ``marker`` (the
        managed block's marker, ``{mark}`` for BEGIN/END), ``python`` (the server's interpreter, ``''`` unknown),
        ``sitecustomize`` (full path or ``''``), ``pythonpath`` (str) and ``problems`` (list of dicts ``check`` - the
        check's name - and ``message`` - what is wrong and what to do; empty: the pre-flight passes). No value of
        ``variables``, ``nccl`` or ``extra`` appears in a message (``cuda_home``, no secret, is named where it is
        wrong). Facts or a read that are not mappings count as missing.
    """
    inputs, facts = _as_dict(inputs), _as_dict(facts)
    cuda_home = _input(inputs, 'cuda_home', '')
    manage = truth(_input(inputs, 'manage_sitecustomize', True))
    python = _as_dict(facts.get('python'))
    plan = {
        'manage_sitecustomize': manage,
        'environment': cuda_env_environment(cuda_home, _input(inputs, 'variables'), _input(inputs, 'nccl'),
                                            _input(inputs, 'extra')),
        'marker': CUDA_ENV_MARKER,
        'python': str(python.get('executable') or ''),
        'sitecustomize': _sitecustomize(facts),
        'pythonpath': str(python.get('pythonpath') or ''),
    }
    problems = plan['problems'] = []
    if 'init' not in facts:
        problems.append(_problem(CHECK_FACTS, 'cuda_env_host_facts holds no host facts: run the role inferops.sglang.facts '
                                              '(module inferops.sglang.host_facts) before inferops.sglang.cuda_env, or '
                                              'pass its facts in cuda_env_host_facts.'))
        return plan
    error = _as_dict(python.get('sitecustomize')).get('error')
    if error:
        problems.append(_problem(CHECK_IMPORT, '%s fails to import its sitecustomize.py at start-up: %s. Every process of '
                                               'that interpreter starts without what the file sets (the CUDA/NCCL '
                                               'environment included). Fix that file (or remove it), then run again. '
                                               'Nothing was changed.' % (plan['python'], error)))
    if not (isinstance(cuda_home, str) and cuda_home.startswith('/')):
        problems.append(_problem(CHECK_CUDA_HOME, 'cuda_env_cuda_home must be an absolute path (got %s).' % (cuda_home,)))
    invalid = invalid_environment(plan['environment'])
    if invalid:
        problems.append(_problem(CHECK_ENV, 'Environment variable(s) %s of the CUDA/NCCL environment are not valid: names '
                                            'are letters, digits and underscores; values must be strings without '
                                            'newlines (quote numbers in YAML, e.g. "1").' % ', '.join(invalid)))
    secrets = cuda_env_secrets(dict(('cuda_env_' + key, _input(inputs, key) or {}) for key in ('variables', 'nccl', 'extra')))
    if secrets:
        problems.append(_problem(CHECK_SECRETS, '%s look like secrets (by the variable\'s name, or a password in a URL of '
                                                'its value). These variables are written to %s and to sitecustomize.py, '
                                                'both mode 0644 and readable by every local user. Set a secret in '
                                                'service_environment of the role inferops.sglang.service instead, which '
                                                'keeps it in the server\'s environment file (mode 0600). No value is shown '
                                                'here.' % (', '.join(secrets), _input(inputs, 'env_file', 'cuda.env'))))
    site = plan['sitecustomize']
    if manage and not (plan['python'] and site.startswith('/') and site.endswith('/sitecustomize.py')):
        problems.append(_problem(CHECK_LOCATION, 'Cannot tell which sitecustomize.py %s imports (got %s). Check '
                                                 'facts_python, or set cuda_env_manage_sitecustomize to false.'
                                                 % (plan['python'] or 'the server interpreter', site or 'nothing')))
    if state is not None and not problems:
        problems.extend(_state_problems(plan, cuda_home, facts, _as_dict(state), manage))
    return plan
