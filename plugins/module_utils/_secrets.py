# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Which command line flags and environment variables hold secrets, and how they are hidden.

The one rule for the whole collection: the modules (process discovery, the argument check), the
filters (``secret_flags``, ``redact_args``, ``server_argv``) and through them the roles.

A flag's value is a secret (:func:`is_secret_flag`) when the flag is

* one of ``SECRET_FLAGS``: the credentials of the SGLang server (``--api-key``, ``--admin-api-key``,
  ``--ssl-keyfile-password``; ``sglang/srt/arg_groups/fields/serving.py``) and of the sglang-router
  (``--api-key``, ``--control-plane-api-keys``, ``--oracle-password``, ``--postgres-db-url``,
  ``--redis-url``: a database URL carries its password);
* ``--watermark-config`` with an inline JSON object (it may hold the watermark key; SGLang redacts
  it from its own recorded launch command), not a file path;
* named with one of the words of ``SECRET_FLAG_WORDS`` (``--hf-token``, ``--db-password``), unless it
  is one of ``NOT_SECRET_FLAGS``, SGLang flags whose names contain such a word but hold no secret
  (``--ssl-keyfile``, ``--speculative-token-map``; the router's ``--tls-key-path``, ``--client-key-path``); ``--max-total-tokens`` and ``--tokenizer-path``
  do not match, since ``tokens`` and ``tokenizer`` are other words;
* an abbreviation argparse would expand to a secret flag (``--api-k``, at least five characters;
  any prefix in the ``--x=value`` form, which argparse echoes whole in its error messages), or a
  secret flag with more letters after it (``--api-keyy``, which argparse reports in an error).

Environment variables are secrets when their name contains KEY, TOKEN, SECRET, PASSWORD or
CREDENTIAL in any case (:func:`is_secret_env_name`). Hidden values read ``MASK``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

MASK = '********'

# Flags (dash form, without the leading dashes) whose value is a credential.
SECRET_FLAGS = (
    'api-key',
    'admin-api-key',
    'ssl-keyfile-password',
    'control-plane-api-keys',
    'oracle-password',
    'postgres-db-url',
    'redis-url',
)
# Flags whose value is a credential only when it is an inline JSON object (else a file path).
SECRET_IF_INLINE_JSON = (
    'watermark-config',
)
# Words that make a flag a secret wherever they appear in its name (``--hf-token``).
SECRET_FLAG_WORDS = frozenset(('key', 'token', 'secret', 'password', 'passwd', 'credential', 'credentials'))
# SGLang flags whose names look like secrets (a secret word in them, or a prefix of a secret flag)
# but whose values are not.
NOT_SECRET_FLAGS = (
    'ssl-keyfile',
    # sglang-router 0.3.2: the paths of its TLS and mTLS private keys (router_args.py, tls_group).
    'tls-key-path',
    'client-key-path',
    'speculative-token-map',
    'bucket-time-to-first-token',
    'bucket-inter-token-latency',
)
# An abbreviation shorter than this (without '=') is not taken for a secret flag: ``--api`` is not.
ABBREVIATION_MIN = 5

_SECRET_ENV_RE = re.compile(r'KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL', re.IGNORECASE)
_NUMBER_RE = re.compile(r'^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$')


def flag_name(flag):
    """``'--api_key=x'`` -> ``'api-key'``: no leading dashes, no ``=value``, ``-`` for ``_``, lower case."""
    return str(flag).lstrip('-').split('=', 1)[0].replace('_', '-').lower()


def _inline_json(value):
    if value is None or isinstance(value, dict):
        return True
    return str(value).lstrip().startswith('{')


def is_secret_flag(flag, value=None, min_prefix=ABBREVIATION_MIN):
    """True when the value of ``flag`` is a secret (the rules are in this file's docstring).

    :param flag: str, with or without leading dashes, ``_`` or ``-`` spelling, ``=value`` allowed.
    :param value: the flag's value when known; only ``--watermark-config`` depends on it (None: assume
        the worst).
    :param min_prefix: shortest abbreviation taken for a secret flag (1 for the ``--x=value`` form).
    :returns: bool.
    """
    name = flag_name(flag)
    if not name:
        return False
    if name in SECRET_FLAGS:
        return True
    if name in SECRET_IF_INLINE_JSON:
        return _inline_json(value)
    if name in NOT_SECRET_FLAGS:
        return False
    if SECRET_FLAG_WORDS.intersection(re.split(r'-+', name)):
        return True
    for secret in SECRET_FLAGS + SECRET_IF_INLINE_JSON:
        if (len(name) >= min_prefix and secret.startswith(name)) or name.startswith(secret):
            return secret not in SECRET_IF_INLINE_JSON or _inline_json(value)
    return False


def _is_long_option(token):
    """A ``--flag`` token (not ``--`` alone, not a negative number)."""
    return token.startswith('--') and token != '--' and not _NUMBER_RE.match(token)


def _secret_positions(tokens):
    """(flag index, value index or None) of every secret flag in argv tokens.

    A flag takes the next token as its value unless that token is another ``--flag``; in the
    ``--flag=value`` form the value index is the flag's own.
    """
    found = []
    for index, token in enumerate(tokens):
        if not _is_long_option(token):
            continue
        name, sep, value = token[2:].partition('=')
        if sep:
            if is_secret_flag(name, value, min_prefix=1):
                found.append((index, index))
            continue
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if following is not None and _is_long_option(following):
            following = None
        if is_secret_flag(name, following):
            found.append((index, None if following is None else index + 1))
    return found


def redact_argv(argv, mask=MASK):
    """A copy of argv (list of str) with the values of secret flags replaced by ``mask``.

    ``--api-key X`` -> ``--api-key ********``; ``--hf-token=X`` -> ``--hf-token=********``. Only the
    value is replaced (secret flags take one value); a following ``--flag`` is not a value.
    """
    tokens = [str(t) for t in argv]
    out = list(tokens)
    for index, value_index in _secret_positions(tokens):
        if value_index == index:
            out[index] = tokens[index].split('=', 1)[0] + '=' + mask
        elif value_index is not None:
            out[value_index] = mask
    return out


def redacted_flags(argv):
    """The secret flags of argv as written (``'--api-key'``), each once, in order of appearance;
    also those given without a value."""
    tokens = [str(t) for t in argv]
    names = []
    for index, _value_index in _secret_positions(tokens):
        flag = tokens[index].split('=', 1)[0]
        if flag not in names:
            names.append(flag)
    return names


def secret_values(argv):
    """The non-empty values of the secret flags in argv (list of str), for masking them in messages."""
    tokens = [str(t) for t in argv]
    values = []
    for index, value_index in _secret_positions(tokens):
        if value_index == index:
            values.append(tokens[index].split('=', 1)[1])
        elif value_index is not None:
            values.append(tokens[value_index])
    return [v for v in values if v]


def secret_flags(args):
    """The flags of ``args`` whose values are secrets, normalized (``'api-key'``), sorted, each once.

    :param args: mapping of server or router arguments (keys with or without leading dashes, ``_`` or
        ``-``; values as for the ``server_argv`` filter), or an argv list.
    :raises TypeError: for anything else.
    """
    if hasattr(args, 'items'):
        found = [flag_name(key) for key, value in args.items() if is_secret_flag(str(key), value)]
    elif isinstance(args, (list, tuple)):
        found = [flag_name(flag) for flag in redacted_flags(args)]
    else:
        raise TypeError('expected a mapping of arguments or an argv list, got %s' % type(args).__name__)
    return sorted(set(found))


def redact_args(args, mask=MASK):
    """A copy of a mapping of arguments with the values of secret flags replaced by ``mask`` (keys kept).

    :raises TypeError: when ``args`` is not a mapping.
    """
    if not hasattr(args, 'items'):
        raise TypeError('expected a mapping of arguments, got %s' % type(args).__name__)
    return dict((key, mask if is_secret_flag(str(key), value) else value) for key, value in args.items())


def is_secret_env_name(name):
    """True for an environment variable whose name says it holds a secret (``HF_TOKEN``, ``db_password``)."""
    return bool(_SECRET_ENV_RE.search(name))


# The password of a URL's user information: ``scheme://user:password@host`` (proxies, database URLs).
_URL_PASSWORD_RE = re.compile(r'(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*:)(?P<password>[^/@\s]+)(?P<tail>@)')


def url_passwords(value):
    """The passwords of every ``scheme://user:password@host`` in ``value`` (a list of str, possibly empty)."""
    return [match.group('password') for match in _URL_PASSWORD_RE.finditer(str(value))]


def redact_url_passwords(value):
    """``value`` with the password of every ``scheme://user:password@host`` in it replaced by the mask.

    :returns: (text, whether anything was masked).
    """
    text = str(value)
    masked = _URL_PASSWORD_RE.sub(lambda m: m.group('head') + MASK + m.group('tail'), text)
    return masked, masked != text


def redact_env(env):
    """Hide secrets in an environment: the whole value of a variable named like a secret (``HF_TOKEN``), and the
    password inside any URL of another value (``HTTPS_PROXY=http://user:password@proxy:3128`` keeps the user and
    the host). Returns (env, sorted names whose values were masked in full or in part)."""
    out = {}
    hidden = []
    for name, value in env.items():
        if is_secret_env_name(name):
            out[name] = MASK
            hidden.append(name)
            continue
        masked, changed = redact_url_passwords(value) if isinstance(value, str) else (value, False)
        out[name] = masked
        if changed:
            hidden.append(name)
    return out, sorted(hidden)
