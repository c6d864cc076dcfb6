# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _known_good as kg


def test_parse_manifest():
    text = '{"schema": 1, "files": ["/etc/systemd/system/sglang.service", "/etc/sglang/sglang.env"]}'
    assert kg.parse_known_good_manifest(text, '/kg/manifest.json')['files'][1] == '/etc/sglang/sglang.env'


def test_parse_manifest_without_files():
    assert kg.parse_known_good_manifest('{"schema": 1}', '/kg/manifest.json') == {'schema': 1}


@pytest.mark.parametrize('text, words', [
    ('{not json', 'not valid JSON'),
    ('[1, 2]', 'JSON list, not an object'),
    ('{"files": "/etc/sglang/sglang.env"}', 'list of absolute paths'),
    ('{"files": ["sglang.env"]}', 'list of absolute paths'),
])
def test_parse_manifest_rejects(text, words):
    with pytest.raises(ValueError) as info:
        kg.parse_known_good_manifest(text, '/kg/manifest.json')
    assert words in str(info.value) and '/kg/manifest.json' in str(info.value)
    assert 'run the site playbook again' in str(info.value)


def test_kept_copy_path():
    assert kg.kept_copy_path('/kg', '/etc/systemd/system/sglang.service') == '/kg/sglang.service'


def test_differ_in_manifest_order():
    """The live env file changed since the cutover saved it (a --tags sglang_service run): it differs."""
    sums = {'/etc/a.service': '1', '/kg/a.service': '1', '/etc/sglang/b.env': '2', '/kg/b.env': '3',
            '/etc/sglang/c.env': '4', '/kg/c.env': '4'}
    files = ['/etc/sglang/b.env', '/etc/a.service', '/etc/sglang/c.env']
    assert kg.known_good_differ(files, '/kg', sums.get) == ['/etc/sglang/b.env']


def test_differ_missing_sides():
    """Missing on both sides does not differ; missing on one side does (a removed --config file)."""
    sums = {'/etc/one.yaml': 'x', '/kg/two.yaml': 'y'}
    files = ['/etc/one.yaml', '/etc/two.yaml', '/etc/none.yaml']
    assert kg.known_good_differ(files, '/kg', sums.get) == ['/etc/one.yaml', '/etc/two.yaml']


def test_manifest_text_is_to_nice_json():
    assert kg.known_good_manifest_text({'b': [1], 'a': 'é'}) == '{\n    "a": "é",\n    "b": [\n        1\n    ]\n}\n'


def test_history_to_prune_keeps_the_newest():
    entries = ['/h/20261101T000000000000Z', '/h/20261201T000000000000Z', '/h/20261115T000000000000Z']
    assert kg.history_to_prune(entries, 2) == ['/h/20261101T000000000000Z']
    assert kg.history_to_prune(entries, 5) == []
    assert kg.history_to_prune(entries, 0) == sorted(entries, reverse=True)


def test_history_entry_name():
    assert kg.history_entry_name(1795836602.25) == '20261128T033002250000Z'


def test_manifest_text_never_holds_a_secret_of_the_command():
    command = ['/venv/bin/python3', '-m', 'sglang.launch_server', '--api', 'KEY123',
               '--otlp-traces-endpoint', 'http://u:PASS@otel.example:4317']
    text = kg.known_good_manifest_text({'command': command, 'unit': 'sglang.service'})
    assert 'KEY123' not in text and 'PASS' not in text
    assert json.loads(text)['command'][-1] == 'http://u:********@otel.example:4317'
