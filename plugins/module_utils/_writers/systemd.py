# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Writers of systemd unit file values, one per kind of directive.

Sources (systemd 252, the oldest the collection's molecule hosts run): systemd.syntax(7) - a unit file is read
line by line, the value of ``Key=value`` is stripped of surrounding white space, a line whose last character is an
unescaped backslash continues on the next one, lines must be valid UTF-8; systemd.unit(5) "Specifiers" - ``%x`` is
expanded in most values and ``%%`` is a literal ``%``; systemd.exec(5) / systemd.service(5) per directive:

* ``WorkingDirectory=``, ``EnvironmentFile=`` (:func:`unit_path`): specifier expansion, then the path is taken
  literally - no quoting and no escapes, so a value a line cannot hold literally is refused.
* ``ReadWritePaths=`` and the other namespace path lists (:func:`unit_paths`): split with ``extract_first_word``
  (``EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE``: double or single quotes, C escapes), then specifier expansion of each
  word, then the ``-`` (ignore a missing path) and ``+`` (relative to RootDirectory=) prefixes.
* ``ExecStart=`` (:func:`systemd_quote`, :func:`exec_lines`): specifier expansion of the line, then split like a
  path list; ``$VAR``/``${VAR}`` is expanded at start (``$$`` is a ``$``); a lone ``;`` separates commands; the
  first word's leading ``-@:+!|`` are prefixes, even when quoted.
* ``Environment=`` (:func:`unit_environment`): split like a path list, then specifier expansion; no ``$``
  expansion.
* ``User=``, ``Group=``, ``Restart=``, numbers (:func:`unit_word`), ``SupplementaryGroups=`` (:func:`unit_words`)
  and free text such as ``Description=`` or ``SyslogIdentifier=`` (:func:`unit_text`): specifier expansion only.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import (
    Unwritable,
    as_text,
    char_phrase,
    is_control,
    refuse_chars,
)

# systemd's WHITESPACE (the separators of extract_first_word and what is stripped around a value).
_WHITESPACE = ' \t\n\r'
# The first word of a command line: these leading characters are prefixes (systemd.service(5), "Command lines").
_EXEC_PREFIXES = '-@:+!|'
_LINE = 'a systemd unit line'
# A variable name, in every format the collection writes (the POSIX shell's rule; systemd's env_name_is_valid is
# wider, this is the part both accept).
ENV_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*\Z')


def _single_line_text(value, what):
    """Common checks of a value written literally on one unit line; returns it with ``%`` doubled."""
    text = as_text(value, what)
    refuse_chars(text, what)
    if text != text.strip(_WHITESPACE + '\v\f'):
        raise Unwritable('begins or ends with white space, which %s strips' % what)
    if _ends_escaped(text):
        raise Unwritable('ends with a backslash, which makes %s continue on the next line' % what)
    return text.replace('%', '%%')


def _ends_escaped(text):
    escaped = False
    for ch in text:
        escaped = (not escaped) and ch == '\\'
    return escaped


def unit_text(value):
    """Free text for one directive (``Description=``, ``SyslogIdentifier=``, a number, a time span).

    ``%`` is written ``%%``. Refused (:class:`Unwritable`): a line break or any other control character, white space
    at either end (systemd strips it), a trailing backslash (line continuation), a type other than str/int/float.
    """
    return _single_line_text(value, _LINE)


def unit_word(value):
    """One word (``User=``, ``Group=``, ``Restart=``, ``LimitNOFILE=``): :func:`unit_text` without white space,
    quotes or backslashes, and not empty."""
    text = as_text(value, 'a systemd unit word')
    if text == '':
        raise Unwritable('is empty, which a systemd unit word cannot be')
    refuse_chars(text, 'a systemd unit word')
    for ch in text:
        if ch.isspace() or ch in '"\'\\':
            raise Unwritable('holds %s, which a systemd unit word cannot hold' % (
                'white space' if ch.isspace() else 'a quote or backslash'))
    return _single_line_text(text, 'a systemd unit word')


def unit_words(values):
    """A space-separated list of :func:`unit_word` (``SupplementaryGroups=``); ``values`` is a list."""
    if isinstance(values, (str, bytes)) or not hasattr(values, '__iter__'):
        raise Unwritable('is not a list, which a systemd word list needs')
    return ' '.join(unit_word(value) for value in values)


def _path_checks(path, what):
    if not path.startswith('/'):
        raise Unwritable('is not an absolute path, which %s needs' % what)
    if '..' in path.split('/'):
        raise Unwritable('holds a ".." component, which systemd refuses in %s' % what)


def unit_path(value):
    """An absolute path written literally (``WorkingDirectory=``, ``EnvironmentFile=``).

    systemd takes such a value literally after specifier expansion, so ``%`` is written ``%%`` and nothing else can
    be escaped. Refused: a relative path, a ``..`` component (systemd ignores the directive), a line break, NUL or
    other control character, white space at either end, a trailing backslash, non-text.
    """
    written = _single_line_text(value, 'a systemd path (written literally, without quotes)')
    _path_checks(as_text(value, 'a systemd path'), 'a systemd path')
    return written


def _c_quote(text, dollar=False):
    """``text`` as one word of ``extract_first_word(EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE)``: bare when it needs no
    quoting, else in double quotes with C escapes. ``%`` is doubled; ``$`` too when ``dollar``."""
    escaped = text.replace('%', '%%')
    if dollar:
        escaped = escaped.replace('$', '$$')
    needs_quotes = text == '' or any(ch in text for ch in ' \t\n\r\v\f"\'\\') or any(is_control(ch) for ch in text)
    if not needs_quotes:
        return escaped
    out = []
    for ch in escaped:
        if ch == '\\':
            out.append('\\\\')
        elif ch == '"':
            out.append('\\"')
        elif ch == '\n':
            out.append('\\n')
        elif ch == '\r':
            out.append('\\r')
        elif ch == '\t':
            out.append('\\t')
        elif is_control(ch):
            out.append('\\x%02x' % ord(ch))
        else:
            out.append(ch)
    return '"' + ''.join(out) + '"'


def _no_nul_or_surrogate(text, what):
    for ch in text:
        if ch == '\x00' or 0xD800 <= ord(ch) <= 0xDFFF or 0x80 <= ord(ch) <= 0x9f:
            raise Unwritable('holds %s, which %s cannot hold' % (char_phrase(ch), what))


def unit_paths(values):
    """A space-separated path list (``ReadWritePaths=``, ``ReadOnlyPaths=``, ``InaccessiblePaths=``).

    ``values``: a list of absolute paths, each optionally prefixed ``-`` (a missing path is ignored) then ``+``.
    Each entry is one word, quoted with C escapes where it needs it, ``%`` doubled. An empty list is ``''`` (which
    resets the list in systemd: write the directive only for a non-empty list). Refused: a relative path, a
    ``..`` component, NUL, C1 control characters or lone surrogates, non-text.
    """
    if isinstance(values, (str, bytes)) or not hasattr(values, '__iter__'):
        raise Unwritable('is not a list, which a systemd path list needs')
    words = []
    for value in values:
        text = as_text(value, 'a systemd path list')
        _no_nul_or_surrogate(text, 'a systemd path list')
        bare = text[1:] if text.startswith('-') else text
        bare = bare[1:] if bare.startswith('+') else bare
        _path_checks(bare, 'a systemd path list')
        words.append(_c_quote(text))
    return ' '.join(words)


def unit_environment(name, value):
    """One ``Environment=`` word, ``"NAME=value"`` quoted with C escapes, ``%`` doubled (systemd does not expand
    ``$`` there). Refused: a name that is not ``[A-Za-z_][A-Za-z0-9_]*``, a value holding a control character other
    than tab and line break (systemd drops such an assignment), NUL, non-text."""
    if not isinstance(name, str) or not ENV_NAME_RE.match(name):
        raise Unwritable('is not a variable name ([A-Za-z_][A-Za-z0-9_]*), which Environment= needs')
    text = as_text(value, 'an Environment= value')
    refuse_chars(text, 'an Environment= value', allowed='\t\n')
    return _c_quote('%s=%s' % (name, text))


def systemd_quote(token):
    """Quote one argv word for ``ExecStart=`` so that systemd passes it through unchanged.

    systemd.service(5), "Command lines": a command line is split on white space; a word may be wrapped in double or
    single quotes; C-style escapes are recognised; ``%`` specifiers are expanded (``%%`` is a literal ``%``);
    ``$FOO``/``${FOO}`` are environment variable substitutions and ``$$`` is a literal ``$``; a lone ``;``
    separates commands (a literal one is ``\\;``).

    So ``%`` and ``$`` are always doubled; the word is wrapped in double quotes when it is empty or holds white
    space, a quote, a backslash or a control character, and inside the quotes ``\\`` and ``"`` are escaped and
    control characters written as C escapes. Refused: a NUL byte (no argv word can hold it), a lone surrogate.
    """
    token = str(token)
    _no_nul_or_surrogate(token, 'a command line word')
    if token == ';':
        return '\\;'
    return _c_quote(token, dollar=True)


def systemd_command_line(argv):
    """Join argv words for ``ExecStart=`` with :func:`systemd_quote`."""
    return ' '.join(systemd_quote(token) for token in argv)


def exec_lines(tokens):
    """Group argv words into lines of a multi-line ``ExecStart=``: the program and its leading non-flag words on the
    first line, then one ``--flag [values]`` per line, each word quoted by :func:`systemd_quote`.

    :param tokens: list, the full command line (words are turned into str).
    :returns: list of str; the template joins them with `` \\`` line continuations.
    :raises Unwritable: a program that is empty or begins with one of ``-@:+!|`` (systemd would read them as
        prefixes of ``ExecStart=``, quoted or not), or a word :func:`systemd_quote` refuses.
    """
    tokens = [str(token) for token in tokens]
    if tokens and (tokens[0] == '' or tokens[0][0] in _EXEC_PREFIXES):
        raise Unwritable('is a program name that is empty or begins with one of "%s", which ExecStart= reads as '
                         'prefixes' % _EXEC_PREFIXES)
    lines = []
    current = []
    for token in tokens:
        if token.startswith('--') and current:
            lines.append(' '.join(systemd_quote(t) for t in current))
            current = []
        current.append(token)
    if current:
        lines.append(' '.join(systemd_quote(t) for t in current))
    return lines
