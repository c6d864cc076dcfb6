# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Which command line flags and environment variables hold secrets, and how they are hidden.

The one rule for the whole collection: the modules (process discovery, the argument check), the
filters (``secret_flags``, ``redact_args``, ``redact_env``, ``server_argv``) and through them the roles.

A flag's value is a secret (:func:`is_secret_flag`) when the flag is

* one of ``SECRET_FLAGS``: the credentials of the SGLang server (``--api-key``, ``--admin-api-key``,
  ``--ssl-keyfile-password``; SGLang 0.5.23 ``python/sglang/srt/arg_groups/fields/serving.py``, parsed by
  ``python/sglang/srt/server_args.py``) and of the sglang-router (``--api-key``, ``--control-plane-api-keys``,
  ``--oracle-password``, ``--postgres-db-url``, ``--redis-url``: a database URL carries its password);
* ``--watermark-config`` with an inline JSON object (it may hold the watermark key; SGLang redacts
  it from its own recorded launch command), not a file path;
* named with one of the words of ``SECRET_FLAG_WORDS`` (``--hf-token``, ``--db-password``), unless it
  is one of ``NOT_SECRET_FLAGS``, SGLang flags whose names contain such a word but hold no secret
  (``--speculative-token-map``; the router's ``--tls-key-path``); ``--max-total-tokens`` and ``--tokenizer-path``
  do not match, since ``tokens`` and ``tokenizer`` are other words;
* any prefix of a secret flag (``--api``, ``--api-k``, ``--admin-api``, ``--a``): SGLang's parser is an
  ``argparse.ArgumentParser`` with ``allow_abbrev`` on, which expands a unique prefix of a long option to it
  (``--api KEY`` sets the API key) and reports an ambiguous one; an exact option name wins over prefix
  matching, so the SGLang flags that are themselves prefixes of a secret flag (``--ssl-keyfile`` of
  ``--ssl-keyfile-password``) are listed, with their source, in ``NOT_SECRET_FLAG_SOURCES``;
* a secret flag with more letters after it (``--api-keyy``, which argparse reports with its value in an error).

Where SGLang's own parser is at hand (the ``server_args_check`` module), the option it resolves a token to
counts too: pass its answers as ``resolve`` to :func:`redact_argv`, :func:`redacted_flags` and
:func:`secret_values`.

A value may hold a password inside a URL (``--otlp-traces-endpoint http://user:password@otel:4317``,
``HTTPS_PROXY=http://user:password@proxy:3128``): :func:`url_passwords` finds them, and every masking
function here hides them keeping the user and the host (``http://user:********@otel:4317``).
:func:`secret_flags` and :func:`redacted_flags` name such flags too, since their values must stay out of
argv and unit files.

Environment variables are secrets when their name contains KEY, TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE or
CREDENTIAL, or ends with _PWD (``MYSQL_PWD``), in any case (:func:`is_secret_env_name`). Hidden values read ``MASK``.

A log line is masked by :func:`redact_log_line`, here and on the server itself: this file imports nothing but the
standard library, and the service role installs a copy of it beside the server (``inferops_sglang_secrets.py``), where
the log filter of ``_server_log`` uses it. Keep it that way: no import from the collection.
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
SECRET_FLAG_WORDS = frozenset(('key', 'token', 'secret', 'password', 'passwd', 'passphrase', 'credential',
                               'credentials'))
# Exact flags of SGLang and the sglang-router that look like secrets - a word of SECRET_FLAG_WORDS in the name, or
# a prefix of a secret flag (argparse takes an exact option name before any abbreviation) - but hold none; each
# with where it is defined. The SGLang ones were found by building SGLang 0.5.23's parser and listing its options.
NOT_SECRET_FLAG_SOURCES = (
    ('ssl-keyfile', 'SGLang 0.5.23 python/sglang/srt/server_args.py (field ssl_keyfile of '
                    'arg_groups/fields/serving.py): the path of the SSL key file; a prefix of --ssl-keyfile-password'),
    ('speculative-token-map', 'SGLang 0.5.23 python/sglang/srt/server_args.py (arg_groups/fields/spec.py): a path'),
    ('bucket-time-to-first-token', 'SGLang 0.5.23 python/sglang/srt/server_args.py '
                                   '(arg_groups/fields/observability.py): histogram buckets'),
    ('bucket-inter-token-latency', 'SGLang 0.5.23 python/sglang/srt/server_args.py '
                                   '(arg_groups/fields/observability.py): histogram buckets'),
    ('tbo-token-distribution-threshold', 'SGLang 0.5.23 python/sglang/srt/server_args.py '
                                         '(arg_groups/fields/exec_.py): a number'),
    ('kt-max-deferred-experts-per-token', 'SGLang 0.5.23 python/sglang/srt/server_args.py '
                                          '(arg_groups/fields/exec_.py): a number'),
    ('prefill-delayer-token-usage-low-watermark', 'SGLang 0.5.23 python/sglang/srt/server_args.py '
                                                  '(arg_groups/fields/schedule.py): a number'),
    ('tls-key-path', 'sglang-router 0.3.2 router_args.py (tls_group): the path of its TLS private key'),
    ('client-key-path', 'sglang-router 0.3.2 router_args.py (tls_group): the path of its mTLS client key'),
)
NOT_SECRET_FLAGS = tuple(name for name, _source in NOT_SECRET_FLAG_SOURCES)

# PASSWD and ``_PWD`` at the end (MYSQL_PWD) as well as PASSWORD; not ``PWD`` itself, the shell's working directory.
_SECRET_ENV_RE = re.compile(r'KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|_PWD$', re.IGNORECASE)
_NUMBER_RE = re.compile(r'^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$')
# The password of a URL's user information: ``scheme://user:password@host``, ``scheme://:password@host``. As URL
# parsers read it (Python's urllib.parse, requests, curl): the user information runs to the last ``@`` before the
# path or a blank, and the user to its first ``:``, so a raw ``@`` may be in the user (an e-mail address:
# ``http://john@corp.example:pw@proxy:3128``) and in the password. ``scheme://user@host`` has none.
# The scheme is matched from the start of its run of scheme characters only (the lookbehind), so that a long run of
# letters is scanned once, not once per letter (a quadratic time on a process's 128 KiB argument).
_URL_PASSWORD_RE = re.compile(r'(?P<head>(?<![A-Za-z0-9+.-])[A-Za-z0-9+.-]+://[^/:\s]*:)(?P<password>[^/\s]+)(?P<tail>@)')
# The same without a scheme, as curl and requests take a proxy variable's value (``HTTPS_PROXY=user:pw@proxy:3128``):
# at the start of a value (or after a blank, ``=`` or ``,``), followed by a host name and an optional port, so that
# ``repo:tag@sha256:0123`` or ``org/model:v1@main`` is not taken for one. Its password holds no ``=`` or ``,`` (where
# such a URL may start), which keeps the time linear.
_BARE_URL_PASSWORD_RE = re.compile(r'(?:^|(?<=[\s=,]))(?P<head>[^\s/:@=,]*:)(?P<password>[^\s/@=,]+(?:@[^\s/@=,]+)*?)'
                                   r'(?P<tail>@)(?=[A-Za-z0-9.-]+(?::[0-9]+)?(?:[/\s,]|$))')
_URL_PASSWORD_RES = (_URL_PASSWORD_RE, _BARE_URL_PASSWORD_RE)


def flag_name(flag):
    """``'--api_key=x'`` -> ``'api-key'``: no leading dashes, no ``=value``, ``-`` for ``_``, lower case."""
    return str(flag).lstrip('-').split('=', 1)[0].replace('_', '-').lower()


def _inline_json(value):
    if value is None or isinstance(value, dict):
        return True
    return str(value).lstrip().startswith('{')


def is_secret_flag(flag, value=None):
    """True when the value of ``flag`` is a secret by the flag's name (the rules are in this file's docstring).

    :param flag: str, with or without leading dashes, ``_`` or ``-`` spelling (an argparse ``dest`` such as
        ``api_key`` too), ``=value`` allowed.
    :param value: the flag's value when known; only ``--watermark-config`` and its prefixes depend on it (None:
        assume the worst).
    :returns: bool. A password inside a URL value does not make the flag secret here (:func:`url_passwords`).
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
        if secret.startswith(name) or name.startswith(secret):
            return secret not in SECRET_IF_INLINE_JSON or _inline_json(value)
    return False


def url_passwords(value):
    """The passwords of every ``scheme://user:password@host`` (or ``scheme://:password@host``) in ``value``.

    :param value: any value; a list or tuple is searched item by item, a mapping value by value, anything else
        as its text.
    :returns: list of str, possibly empty; ``scheme://user@host`` has none.
    """
    if isinstance(value, dict):
        return [p for item in value.values() for p in url_passwords(item)]
    if isinstance(value, (list, tuple)):
        return [p for item in value for p in url_passwords(item)]
    if value is None or isinstance(value, bool):
        return []
    text = str(value)
    found = [match.group('password') for match in _URL_PASSWORD_RE.finditer(text)]
    return found + [match.group('password') for match in _BARE_URL_PASSWORD_RE.finditer(_URL_PASSWORD_RE.sub('', text))]


def redact_url_passwords(value):
    """``value`` with the password of every ``scheme://user:password@host`` in it replaced by the mask; the user,
    host and path are kept (``http://u:********@otel.example:4317``).

    :returns: (text, whether anything was masked).
    """
    text = str(value)
    masked = text
    for regex in _URL_PASSWORD_RES:
        masked = regex.sub(lambda m: m.group('head') + MASK + m.group('tail'), masked)
    return masked, masked != text


def _mask_urls_in(value):
    """``value`` (str, number, list, mapping) with the URL passwords in its strings masked, in the same shape."""
    if isinstance(value, str):
        return redact_url_passwords(value)[0]
    if isinstance(value, (list, tuple)):
        return [_mask_urls_in(item) for item in value]
    if isinstance(value, dict):
        return dict((key, _mask_urls_in(item)) for key, item in value.items())
    return value


def _is_long_option(token):
    """A ``--flag`` token (not ``--`` alone, not a negative number)."""
    return token.startswith('--') and token != '--' and not _NUMBER_RE.match(token)


def _flag_is_secret(name, value, resolve):
    """The flag NAME (as written, without dashes) is secret by its name or by what ``resolve`` makes of it."""
    if is_secret_flag(name, value):
        return True
    if resolve is None:
        return False
    resolved = resolve('--' + name)
    return bool(resolved) and is_secret_flag(resolved, value)


def _secret_positions(tokens, resolve=None):
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
            if _flag_is_secret(name, value, resolve):
                found.append((index, index))
            continue
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if following is not None and _is_long_option(following):
            following = None
        if _flag_is_secret(name, following, resolve):
            found.append((index, None if following is None else index + 1))
    return found


def redact_argv(argv, mask=MASK, resolve=None):
    """A copy of argv (list of str) with the values of secret flags replaced by ``mask``, and the password of
    every URL in the other tokens masked.

    ``--api-key X`` -> ``--api-key ********``; ``--hf-token=X`` -> ``--hf-token=********``;
    ``--otlp-traces-endpoint http://u:p@h:4317`` -> ``--otlp-traces-endpoint http://u:********@h:4317``. Only
    the value is replaced (secret flags take one value); a following ``--flag`` is not a value.

    :param resolve: optional callable: ``'--api'`` -> the option or ``dest`` a real parser resolves it to
        (``'api_key'``), or None; a token it resolves to a secret flag is secret too.
    """
    tokens = [str(t) for t in argv]
    out = [redact_url_passwords(t)[0] for t in tokens]
    for index, value_index in _secret_positions(tokens, resolve):
        if value_index == index:
            out[index] = tokens[index].split('=', 1)[0] + '=' + mask
        elif value_index is not None:
            out[value_index] = mask
    return out


def _url_password_flags(tokens):
    """(index, flag as written) of every flag whose value token (or ``=value``) holds a URL password."""
    found = []
    current = None
    for index, token in enumerate(tokens):
        if _is_long_option(token):
            name, sep, value = token.partition('=')
            current = None if sep else (index, name)
            if sep and url_passwords(value):
                found.append((index, name))
            continue
        if current is not None and url_passwords(token):
            found.append(current)
    return found


def redacted_flags(argv, resolve=None):
    """The flags of argv as written (``'--api-key'``) whose values are hidden, each once, in order of appearance:
    the secret flags (also those given without a value) and the flags whose values hold a URL password.

    :param resolve: as for :func:`redact_argv`.
    """
    tokens = [str(t) for t in argv]
    found = [(index, tokens[index].split('=', 1)[0]) for index, _value in _secret_positions(tokens, resolve)]
    found.extend(_url_password_flags(tokens))
    names = []
    for _index, flag in sorted(found):
        if flag not in names:
            names.append(flag)
    return names


def secret_values(argv, resolve=None):
    """The non-empty values of the secret flags in argv and the URL passwords in any of its tokens (list of str,
    each once, longest first), for masking them in messages (:func:`mask_values`).

    :param resolve: as for :func:`redact_argv`.
    """
    tokens = [str(t) for t in argv]
    values = []
    for index, value_index in _secret_positions(tokens, resolve):
        if value_index == index:
            values.append(tokens[index].split('=', 1)[1])
        elif value_index is not None:
            values.append(tokens[value_index])
    for token in tokens:
        values.extend(url_passwords(token))
    return sorted(set(v for v in values if v), key=lambda v: (-len(v), v))


def mask_values(text, values, mask=MASK):
    """TEXT (str, or None which stays None) with every occurrence of each of VALUES (longest first) and every URL
    password replaced by ``mask``."""
    if text is None:
        return None
    text = str(text)
    for value in sorted((v for v in values if v), key=len, reverse=True):
        text = text.replace(value, mask)
    return redact_url_passwords(text)[0]


def secret_flags(args):
    """The flags of ``args`` whose values are secrets or hold a URL password, normalized (``'api-key'``), sorted,
    each once. A flag named here must be kept out of command lines and unit files.

    :param args: mapping of server or router arguments (keys with or without leading dashes, ``_`` or
        ``-``; values as for the ``server_argv`` filter), or an argv list.
    :raises TypeError: for anything else.
    """
    if hasattr(args, 'items'):
        found = [flag_name(key) for key, value in args.items()
                 if is_secret_flag(str(key), value) or url_passwords(value)]
    elif isinstance(args, (list, tuple)):
        found = [flag_name(flag) for flag in redacted_flags(args)]
    else:
        raise TypeError('expected a mapping of arguments or an argv list, got %s' % type(args).__name__)
    return sorted(set(found))


def redact_args(args, mask=MASK):
    """A copy of a mapping of arguments with the values of secret flags replaced by ``mask`` and the password of
    every URL in the other values masked (keys and order kept; lists and mappings keep their shape).

    :raises TypeError: when ``args`` is not a mapping.
    """
    if not hasattr(args, 'items'):
        raise TypeError('expected a mapping of arguments, got %s' % type(args).__name__)
    return dict((key, mask if is_secret_flag(str(key), value) else _mask_urls_in(value))
                for key, value in args.items())


def is_secret_env_name(name):
    """True for an environment variable whose name says it holds a secret (``HF_TOKEN``, ``db_password``)."""
    return bool(_SECRET_ENV_RE.search(name))


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


# The shapes a log line shows a setting in: ``name='value'`` / ``name = value`` (a Python repr, as in
# ``server_args=ServerArgs(...)``), ``'name': value`` (a dict repr, 0.5.23's ``server_args={...}``, JSON),
# ``name: value`` (YAML, HTTP headers), ``--flag value`` / ``--flag=value`` (a command line), ``'--flag', 'value'`` (an
# argv list repr) and ``Bearer TOKEN``; ``#new-token: 6`` (SGLang's batch statistics) is no setting. A value is a
# quoted string (``b'...'`` too), a bracketed list, dict or tuple one
# level deep, a call such as ``SecretStr('...')``, or a bare word, which ends where another setting or a URL query part
# could start (``(`` ``[`` ``{`` ``=`` ``&`` ``?`` ``,`` ``;``), so that ``server_args=ServerArgs(api_key='x')`` is read
# as ``server_args=ServerArgs`` and then ``api_key='x'``. Every alternative starts with a different character, which
# keeps the search linear.
_QUOTED = r"'(?:[^'\\]|\\.)*'" + '|' + r'"(?:[^"\\]|\\.)*"'
_INNER = r"(?:%s|[^\[\]{}()'\"])*" % _QUOTED
_BRACKETED = r"\[%s\]|\{%s\}|\(%s\)" % (_INNER, _INNER, _INNER)
_BARE = r"""[^\s,;()\[\]{}=&?'"]+"""
_VALUE = r"(?:[bBuUrR]?(?:%s)|%s|[A-Za-z_][\w.]*\(%s\)|%s)" % (_QUOTED, _BRACKETED, _INNER, _BARE)
_ASSIGNMENT_RE = re.compile(r"(?<![\w.-])([A-Za-z_][A-Za-z0-9_-]*)([ \t]*=[ \t]*)(%s)" % _VALUE)
_DICT_ITEM_RE = re.compile(r"""(['"])([A-Za-z_][A-Za-z0-9_-]*)\1(\s*:\s*)(%s)""" % _VALUE)
_COLON_RE = re.compile(r"""(?<![\w.'"/#-])([A-Za-z_][A-Za-z0-9_-]*)([ \t]*:[ \t]+)(%s)""" % _VALUE)
_FLAG_RE = re.compile(r"""(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9_-]*)(=|\s+)(%s|[^\s'"]+)""" % _QUOTED)
_ARGV_ITEM_RE = re.compile(r"""(['"])(--[A-Za-z0-9][A-Za-z0-9_-]*)\1(\s*,\s*)(%s)""" % _QUOTED)
_BEARER_RE = re.compile(r"(?<![\w-])((?i:bearer|basic))([ \t]+)([A-Za-z0-9._~+/=-]+)")
_CAMEL_RE = re.compile(r'(?<=[a-z0-9])(?=[A-Z])')


def _masked(value):
    """``value`` hidden, keeping its quotes; None, '' and a following ``--flag`` are left alone."""
    if value in ('None', "''", '""', 'null', '[]', '{}', '()') or value.startswith('--'):
        return value
    if value[:1] in ('"', "'"):
        return value[0] + MASK + value[0]
    return MASK


def is_secret_field(name):
    """True when a field or key named ``name`` in a log line (not a command line) holds a secret.

    The rule of :func:`is_secret_flag` without its argparse prefix matching (``a=1`` is not ``--api-key``), in any
    spelling: ``api_key``, ``API-KEY``, ``apiKey``, ``hf_token``, ``MYSQL_PWD``.
    """
    name = flag_name(_CAMEL_RE.sub('_', str(name)))
    if not name or name in NOT_SECRET_FLAGS:
        return False
    if name in SECRET_FLAGS or name in SECRET_IF_INLINE_JSON or name.endswith('-pwd'):
        return True
    return bool(SECRET_FLAG_WORDS.intersection(re.split(r'-+', name)))


def redact_log_line(line):
    """``line`` with the values of secret settings hidden (``api_key='s3cret'`` -> ``api_key='********'``).

    A field is secret by :func:`is_secret_field` (``api_key``, ``admin_api_key``, ``ssl_keyfile_password``,
    ``hf_token``, ``apiKey``...; not ``ssl_keyfile`` or ``max_total_tokens``), a command-line flag by
    :func:`is_secret_flag`, in the shapes listed above; ``Bearer``/``Basic`` credentials, and the password of
    every URL in the line (:func:`redact_url_passwords`: ``otlp_traces_endpoint='http://u:********@h'``).
    Limits: a bare value holding ``,`` ``;`` ``(`` ``=`` ``&`` or ``?`` is masked up to that character; a
    multi-value flag (``--control-plane-api-keys A B``) only in its first value on a command line.
    """
    def field(pattern, name_group, value_group):
        def replace(match):
            head = match.group(0)[:match.start(value_group) - match.start(0)]
            value = match.group(value_group)
            if is_secret_field(match.group(name_group)):
                return head + _masked(value)
            if value[-1:] in (')', ']', '}'):  # a container or a call: its own fields are searched too
                return head + pattern.sub(replace, value)
            return match.group(0)
        return replace

    def flag(match):
        if not is_secret_flag(match.group(1)[2:], match.group(3)):
            return match.group(0)
        return match.group(1) + match.group(2) + _masked(match.group(3))

    def argv_item(match):
        if not is_secret_flag(match.group(2)[2:], match.group(4)):
            return match.group(0)
        return match.group(0)[:match.start(4) - match.start(0)] + _masked(match.group(4))

    line = _FLAG_RE.sub(flag, line)
    line = _ARGV_ITEM_RE.sub(argv_item, line)
    for pattern, name_group, value_group in ((_DICT_ITEM_RE, 2, 4), (_ASSIGNMENT_RE, 1, 3), (_COLON_RE, 1, 3)):
        line = pattern.sub(field(pattern, name_group, value_group), line)
    line = _BEARER_RE.sub(lambda m: m.group(1) + m.group(2) + MASK, line)
    return redact_url_passwords(line)[0]
