# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The systemd unit writers: what they write reads back as the value under systemd's rules, or they refuse.

The reader below follows systemd 252's documented rules (systemd.syntax(7), systemd.unit(5) "Specifiers",
systemd.service(5) "Command lines", and extract_first_word with EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE for path lists,
Environment= and command lines). Where systemd-analyze exists (molecule hosts), the molecule scenarios check real
units; here it is not used.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import Unwritable
from ansible_collections.inferops.sglang.plugins.module_utils._writers.systemd import (
    exec_lines,
    systemd_command_line,
    systemd_quote,
    unit_environment,
    unit_path,
    unit_paths,
    unit_text,
    unit_word,
    unit_words,
)

try:
    import hypothesis
    from hypothesis import strategies as st
except ImportError:  # ansible-test's venv has no hypothesis: the property tests are skipped there
    hypothesis = None


class Unreadable(Exception):
    """What systemd would not read back as one value."""


WHITESPACE = ' \t\n\r'
SIMPLE_ESCAPES = {'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v', '\\': '\\',
                  '"': '"', "'": "'", 's': ' '}


def line_value(raw):
    """The value of ``Key=raw`` on one line: one physical line, no continuation, valid UTF-8, stripped."""
    if '\n' in raw or '\r' in raw:
        raise Unreadable('more than one line')
    raw.encode('utf-8')
    escaped = False
    for ch in raw:
        escaped = (not escaped) and ch == '\\'
    if escaped:
        raise Unreadable('continues on the next line')
    return raw.strip(WHITESPACE)


def specifiers(text):
    """systemd.unit(5): %% is a literal %; any other specifier would be expanded (not what was meant)."""
    out = []
    i = 0
    while i < len(text):
        if text[i] == '%':
            if text[i + 1:i + 2] != '%':
                raise Unreadable('specifier %' + text[i + 1:i + 2])
            out.append('%')
            i += 2
        else:
            out.append(text[i])
            i += 1
    return ''.join(out)


def _cunescape(text, i):
    """One C escape at text[i] (after the backslash): (character, next index)."""
    c = text[i:i + 1]
    if c == '':
        raise Unreadable('backslash at the end')
    if c in SIMPLE_ESCAPES:
        return SIMPLE_ESCAPES[c], i + 1
    widths = {'x': 2, 'u': 4, 'U': 8}
    if c in widths:
        digits = text[i + 1:i + 1 + widths[c]]
        if len(digits) != widths[c] or any(d not in '0123456789abcdefABCDEF' for d in digits):
            raise Unreadable('bad escape')
        code = int(digits, 16)
    elif c in '01234567':
        digits = text[i:i + 3]
        if len(digits) != 3 or any(d not in '01234567' for d in digits):
            raise Unreadable('bad octal escape')
        code = int(digits, 8)
        return chr(code), i + 3 if code else _nul()
    else:
        raise Unreadable('unknown escape \\' + c)
    if code == 0:
        _nul()
    if c == 'x' and code >= 0x80:
        raise Unreadable('\\x escape of a byte above 0x7f is not that character')
    return chr(code), i + 1 + widths[c]


def _nul():
    raise Unreadable('NUL')


def extract_words(text, semicolon=False):
    """extract_first_word(EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE) repeated: the words of ``text``."""
    words = []
    i = 0
    n = len(text)
    while True:
        while i < n and text[i] in WHITESPACE:
            i += 1
        if i >= n:
            return words
        word = []
        quote = None
        while i < n:
            ch = text[i]
            if quote:
                if ch == quote:
                    quote = None
                    i += 1
                elif ch == '\\':
                    decoded, i = _cunescape(text, i + 1)
                    word.append(decoded)
                else:
                    word.append(ch)
                    i += 1
            elif ch in WHITESPACE:
                break
            elif ch in '"\'':
                quote = ch
                i += 1
            elif ch == '\\':
                if semicolon and text[i + 1:i + 2] == ';':
                    word.append(';')
                    i += 2
                else:
                    decoded, i = _cunescape(text, i + 1)
                    word.append(decoded)
            else:
                word.append(ch)
                i += 1
        if quote:
            raise Unreadable('unterminated quote')
        words.append(''.join(word))


def read_path(raw):
    value = specifiers(line_value(raw))
    if not value.startswith('/'):
        raise Unreadable('not absolute')
    return value


def read_paths(raw):
    return [specifiers(word) for word in extract_words(line_value(raw))]


def read_environment(raw):
    words = [specifiers(word) for word in extract_words(line_value(raw))]
    assert len(words) == 1
    name, dummy, value = words[0].partition('=')
    return name, value


def read_exec(raw):
    """systemd.service(5): specifiers over the line, then words; $$ is $, a lone ; separates commands."""
    text = specifiers(line_value(raw))
    bare = [word for word in text.split() if word == ';']
    if bare:
        raise Unreadable('a second command')
    words = extract_words(text, semicolon=True)
    out = []
    for word in words:
        if '$' in word.replace('$$', ''):
            raise Unreadable('variable expansion')
        out.append(word.replace('$$', '$'))
    return out


# --- examples --------------------------------------------------------------------------------------

INJECTED_DIRECTORY = 'w\nExecStartPre=+/bin/sh -c "id > /pwned-root"'


@pytest.mark.parametrize('value, written', [
    ('/srv/sglang', '/srv/sglang'),
    ('/data/models %h', '/data/models %%h'),
    ('/data/my models', '/data/my models'),
    ('/data/modèles/日本', '/data/modèles/日本'),
    ('/data/$HOME', '/data/$HOME'),
    ('/data/"q"', '/data/"q"'),
])
def test_unit_path_writes_the_path_literally(value, written):
    assert unit_path(value) == written
    assert read_path(written) == value


@pytest.mark.parametrize('value, phrase', [
    ('/x' + INJECTED_DIRECTORY, 'line break'),
    (INJECTED_DIRECTORY, 'line break'),
    ('/x\x00y', 'NUL'),
    ('/x\ry', 'carriage return'),
    ('/x\x1b[31m', 'control character'),
    ('relative/dir', 'not an absolute path'),
    ('/x ', 'white space'),
    ('/x\\', 'backslash'),
    ('/a/../etc', '".."'),
    (['/x'], 'not text'),
])
def test_unit_path_refuses_what_a_unit_cannot_hold(value, phrase):
    with pytest.raises(Unwritable, match=phrase) as caught:
        unit_path(value)
    assert 'pwned' not in str(caught.value) and 'ExecStartPre' not in str(caught.value)


@pytest.mark.parametrize('values, written', [
    (['/var/cache/sglang'], '/var/cache/sglang'),
    (['/var/cache/sglang', '-/root/.cache'], '/var/cache/sglang -/root/.cache'),
    (['/data/models %h'], '"/data/models %%h"'),
    (['-/data/my models', '/a'], '"-/data/my models" /a'),
    (['/a"b', "/c'd", '/e\\f'], '"/a\\"b" "/c\'d" "/e\\\\f"'),
    (['/line\nbreak'], '"/line\\nbreak"'),
    (['/日本'], '/日本'),
    ([], ''),
])
def test_unit_paths_quotes_each_entry(values, written):
    assert unit_paths(values) == written
    assert read_paths(written) == values


@pytest.mark.parametrize('values, phrase', [
    (['relative'], 'not an absolute path'),
    (['-relative'], 'not an absolute path'),
    (['/a\x00'], 'NUL'),
    (['/a/../b'], '".."'),
    ('/a /b', 'not a list'),
])
def test_unit_paths_refuses(values, phrase):
    with pytest.raises(Unwritable, match=phrase):
        unit_paths(values)


def test_unit_paths_keeps_the_working_directory_one_entry():
    # Field case: a working directory with a space was split into two ReadWritePaths= entries (226/NAMESPACE).
    written = unit_paths(['/var/cache/sglang', '/home/u/my dir'])
    assert read_paths(written) == ['/var/cache/sglang', '/home/u/my dir']


@pytest.mark.parametrize('token, expected', [
    ('--tp', '--tp'),
    ('/shared/kimi-k2.5-int4', '/shared/kimi-k2.5-int4'),
    ('0.88', '0.88'),
    ('', '""'),
    ('two words', '"two words"'),
    ('tab\there', '"tab\\there"'),
    ('new\nline', '"new\\nline"'),
    ('cr\rhere', '"cr\\rhere"'),
    ('bell\x07', '"bell\\x07"'),
    ('say "hi"', '"say \\"hi\\""'),
    ("it's", '"it\'s"'),
    ('back\\slash', '"back\\\\slash"'),
    ('100%', '100%%'),
    ('%h/models', '%%h/models'),
    ('$HOME', '$$HOME'),
    ('${FOO}', '$${FOO}'),
    ('a $b %c', '"a $$b %%c"'),
    (';', '\\;'),
    ('a;b', 'a;b'),
    ('{"a":1}', '"{\\"a\\":1}"'),
    (8, '8'),
])
def test_systemd_quote(token, expected):
    assert systemd_quote(token) == expected
    assert read_exec('/bin/x ' + expected) == ['/bin/x', str(token)]


@pytest.mark.parametrize('token', ['a\x00b', 'a\udc80', '\x85'])
def test_systemd_quote_refuses_what_no_argv_word_holds(token):
    with pytest.raises(Unwritable):
        systemd_quote(token)


def test_exec_lines_groups_flags_and_reads_back():
    argv = ['/venv/bin/python3', '-m', 'sglang.launch_server', '--model-path', '/data/models %h', '--tp', '8',
            '--served-model-name', 'a "b" $c', '--x', INJECTED_DIRECTORY]
    lines = exec_lines(argv)
    assert lines[0] == '/venv/bin/python3 -m sglang.launch_server'
    assert all('\n' not in line for line in lines)
    assert read_exec(' '.join(lines)) == argv
    assert systemd_command_line(argv) == ' '.join(lines)


@pytest.mark.parametrize('program', ['-/bin/sh', '+/bin/sh', '@/bin/sh', '!/bin/sh', ':x', '|x', ''])
def test_exec_lines_refuses_a_program_read_as_prefixes(program):
    with pytest.raises(Unwritable, match='prefixes'):
        exec_lines([program, '--x'])


@pytest.mark.parametrize('value, written', [
    ('/usr/bin:/bin', 'PATH=/usr/bin:/bin'),
    ('/opt/my env/bin:/usr/bin', '"PATH=/opt/my env/bin:/usr/bin"'),
    ('/opt/$x/%h', 'PATH=/opt/$x/%%h'),
])
def test_unit_environment_keeps_dollar_literal(value, written):
    assert unit_environment('PATH', value) == written
    assert read_environment(written) == ('PATH', value)


@pytest.mark.parametrize('name, value, phrase', [
    ('1X', 'v', 'variable name'),
    ('A B', 'v', 'variable name'),
    ('A', 'x\x00', 'NUL'),
    ('A', 'x\x1b', 'control character'),
])
def test_unit_environment_refuses(name, value, phrase):
    with pytest.raises(Unwritable, match=phrase):
        unit_environment(name, value)


@pytest.mark.parametrize('value, written', [
    ('SGLang on port 30000', 'SGLang on port 30000'),
    ('50% of "it"', '50%% of "it"'),
    (30000, '30000'),
    ('日本語', '日本語'),
])
def test_unit_text(value, written):
    assert unit_text(value) == written
    assert specifiers(line_value(written)) == str(value)


@pytest.mark.parametrize('value, phrase', [
    ('a\nExecStartPre=/bin/sh', 'line break'),
    (' a', 'white space'),
    ('a\\', 'backslash'),
    (True, 'boolean'),
])
def test_unit_text_refuses(value, phrase):
    with pytest.raises(Unwritable, match=phrase):
        unit_text(value)


@pytest.mark.parametrize('value, phrase', [('my user', 'white space'), ('a"b', 'quote'), ('', 'empty'),
                                           ('u\nx', 'line break')])
def test_unit_word_refuses(value, phrase):
    with pytest.raises(Unwritable, match=phrase):
        unit_word(value)


def test_unit_words():
    assert unit_words(['video', 'render', '%g']) == 'video render %%g'
    with pytest.raises(Unwritable):
        unit_words('video')


# --- properties ------------------------------------------------------------------------------------

if hypothesis is not None:
    TEXT = st.text(st.characters(blacklist_categories=()), max_size=40) | st.sampled_from(
        ['%h', '%%', '$HOME', '"', "'", '\\', '\n', ' ', '\x00', ';', '\\;', 'é', '\udc80'])
    SETTINGS = hypothesis.settings(max_examples=300, deadline=None)

    @SETTINGS
    @hypothesis.given(TEXT)
    def test_unit_path_reads_back_or_refuses(value):
        try:
            written = unit_path('/' + value)
        except Unwritable:
            return
        assert read_path(written) == '/' + value

    @SETTINGS
    @hypothesis.given(st.lists(TEXT, max_size=4), st.sampled_from(['', '-', '-+', '+']))
    def test_unit_paths_read_back_or_refuse(values, prefix):
        entries = [prefix + '/' + value for value in values]
        try:
            written = unit_paths(entries)
        except Unwritable:
            return
        assert read_paths(written) == entries

    @SETTINGS
    @hypothesis.given(st.lists(TEXT, min_size=1, max_size=6))
    def test_command_lines_read_back_or_refuse(argv):
        argv = ['/bin/prog'] + argv
        try:
            lines = exec_lines(argv)
        except Unwritable:
            return
        assert read_exec(' '.join(lines)) == argv

    @SETTINGS
    @hypothesis.given(TEXT)
    def test_environment_reads_back_or_refuses(value):
        try:
            written = unit_environment('V', value)
        except Unwritable:
            return
        assert read_environment(written) == ('V', value)

    @SETTINGS
    @hypothesis.given(TEXT)
    def test_unit_text_reads_back_or_refuses(value):
        try:
            written = unit_text(value)
        except Unwritable:
            return
        assert specifiers(line_value(written)) == value
