# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The service pre-flight's look at the host: the pure rule ``failures`` and the readers of ``_service_preflight``."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import grp
import os
import pwd

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _service_preflight as sp

WANTED = {'host': 'h1', 'config': '', 'user': 'root', 'user_create': False, 'cache_dir': '/var/cache/sglang',
          'working_directory': '/root', 'min_free_disk_gib': 10}
ALL_GOOD = {'config': {'path': '', 'readable': False}, 'models': [{'path': '/m', 'exists': True, 'readable': True}],
            'user': {'exists': True}, 'unreadable': [], 'working_directory': {'exists': True},
            'disk': {'free_kib': 20 * 1048576}}


def wanted(**changes):
    return dict(WANTED, **changes)


def seen(**changes):
    return dict(ALL_GOOD, **changes)


def test_nothing_fails_on_a_good_host():
    assert sp.failures(ALL_GOOD, WANTED) == []


def test_every_failure_at_once_in_the_order_of_the_checks():
    found = sp.failures(
        {'config': {'path': '/etc/s.yaml', 'readable': False}, 'models': [{'path': '/m', 'exists': False}],
         'user': {'exists': False}, 'unreadable': ['/root/venv/bin/python3'], 'working_directory': {'exists': False},
         'disk': {'free_kib': 1048576}},
        wanted(user='sglang', working_directory='/srv/w'))
    assert [item['check'] for item in found] == list(sp.CHECKS)


def test_config_message_is_the_preflight_one():
    message = sp.failures(seen(config={'path': '/etc/s.yaml', 'readable': False}), WANTED)[0]['message']
    assert message == ('service_server_args.config names /etc/s.yaml, which cannot be read on h1 (SGLang would refuse '
                       'to start: Config file not found). Fix the path (a relative one is taken from '
                       'service_working_directory) or create the file.')


def test_model_directory_without_a_readable_config_json():
    found = sp.failures(seen(models=[{'path': '/m', 'exists': True, 'readable': False},
                                     {'path': '/d', 'exists': True, 'readable': True}]), WANTED)
    assert found == [{'check': sp.CHECK_MODELS, 'message': (
        '/m/config.json does not exist or cannot be read: /m is not a model directory. Fix model-path / '
        'speculative-draft-model-path in service_server_args.')}]


def test_missing_user_is_refused_unless_created_and_root_is_never_missing():
    found = sp.failures(seen(user={'exists': False}), wanted(user='sglang'))
    assert found[0]['message'] == ('The service user sglang does not exist on h1. Create it, or set service_user_create '
                                   'to true (a system user with the home /var/cache/sglang).')
    assert sp.failures(seen(user={'exists': False}), wanted(user='sglang', user_create=True)) == []
    assert '/nonexistent' in sp.failures(seen(user={'exists': False}), wanted(user='x', cache_dir=''))[0]['message']
    assert sp.failures(seen(user={'exists': False}), wanted(user='root')) == []


def test_what_the_service_user_cannot_read():
    found = sp.failures(seen(unreadable=['/root/v/bin/python3', '/root/m/config.json']), wanted(user='sglang'))
    assert found[0]['message'].startswith('The service user sglang cannot read /root/v/bin/python3, /root/m/config.json '
                                          '(a directory on the way is closed to it, e.g. /root is 0700).')


def test_missing_working_directory_unless_it_is_the_cache_directory():
    found = sp.failures(seen(working_directory={'exists': False}), wanted(working_directory='/srv/w'))
    assert found[0]['message'].startswith('The working directory /srv/w does not exist on h1; create it')
    assert sp.failures(seen(working_directory={'exists': False}), wanted(working_directory='/var/cache/sglang')) == []


def test_free_disk_space_as_df_counted_it():
    found = sp.failures(seen(disk={'free_kib': 5 * 1048576 + 104858}), WANTED)
    assert found[0]['message'] == ('/root has 5.1 GiB free; the server needs at least 10 GiB for caches '
                                   '(service_min_free_disk_gib).')
    assert sp.failures(seen(disk={'free_kib': 10 * 1048576}), wanted(min_free_disk_gib=10.0)) == []
    assert sp.failures(seen(disk={'free_kib': None}), WANTED) == []
    assert 'at least 0.5 GiB' in sp.failures(seen(disk={'free_kib': 1}), wanted(min_free_disk_gib=0.5))[0]['message']


def test_reader_is_the_user_or_nobody_and_none_for_root():
    assert sp.reader_of('sglang', True) == 'sglang'
    assert sp.reader_of('sglang', False) == 'nobody'
    assert sp.reader_of('root', True) is None


def test_unreadable_as_runs_runuser_per_path():
    calls = []

    def run(argv):
        calls.append(argv)
        return 1 if argv[-1].startswith('/root') else 0
    assert sp.unreadable_as('nobody', ['/root/p', '/opt/m/config.json'], run) == ['/root/p']
    assert calls[0] == ['runuser', '-u', 'nobody', '--', 'test', '-r', '/root/p']
    assert sp.unreadable_as(None, ['/root/p'], run) == []


def test_read_config(tmp_path):
    path = tmp_path / 's.yaml'
    path.write_text(u'port: 8000\n')
    assert sp.read_config(str(path)) == {'path': str(path), 'readable': True, 'content': 'port: 8000\n', 'error': None}
    missing = sp.read_config(str(tmp_path / 'none.yaml'))
    assert not missing['readable'] and missing['content'] is None and 'No such file' in missing['error']
    assert sp.read_config('') == {'path': '', 'readable': False, 'content': None, 'error': None}


def test_look_at_models(tmp_path):
    (tmp_path / 'm').mkdir()
    (tmp_path / 'm' / 'config.json').write_text(u'{}')
    assert sp.look_at_models([str(tmp_path / 'm'), str(tmp_path / 'x')]) == [
        {'path': str(tmp_path / 'm'), 'exists': True, 'readable': True},
        {'path': str(tmp_path / 'x'), 'exists': False, 'readable': False}]


def test_lookup_user_as_getent_and_id():
    me = pwd.getpwuid(os.getuid())
    assert sp.lookup_user('root')['groups'] == []
    entry = sp.lookup_user('nobody')
    assert entry['exists'] and entry['uid'] == pwd.getpwnam('nobody').pw_uid
    assert entry['groups'][0] == grp.getgrgid(pwd.getpwnam('nobody').pw_gid).gr_name
    assert sp.lookup_user('no-such-user-here')['exists'] is False
    assert me.pw_name


def test_gpu_devices_in_the_shape_gpu_device_access_reads(tmp_path):
    (tmp_path / 'nvidia0').write_text(u'')
    os.chmod(str(tmp_path / 'nvidia0'), 0o660)
    (tmp_path / 'nvidia-caps').mkdir()
    found = sp.gpu_devices(str(tmp_path / 'nvidia*'))
    assert found == [{'path': str(tmp_path / 'nvidia0'), 'mode': '0660',
                      'pw_name': pwd.getpwuid(os.getuid()).pw_name, 'gr_name': grp.getgrgid(os.getgid()).gr_name}]


def test_disk_free_of_a_directory_not_created_yet(tmp_path):
    found = sp.disk_free(str(tmp_path / 'a' / 'b'))
    assert found['path'] == str(tmp_path) and found['free_kib'] > 0


# ---- the models' config.json and the installed SGLang's model registry -------------------------------------------------

def _model(directory, text=u'{"architectures": ["LlamaForCausalLM"], "num_attention_heads": 64, "vocab_size": 9}'):
    directory.mkdir(parents=True)
    (directory / 'config.json').write_text(text)
    return directory


def _hub(tmp_path, repo='org--m', commit='abc123'):
    cache = tmp_path / 'hub'
    _model(cache / ('models--' + repo) / 'snapshots' / commit)
    (cache / ('models--' + repo) / 'refs').mkdir()
    (cache / ('models--' + repo) / 'refs' / 'main').write_text(u'%s\n' % commit)
    return cache


@pytest.mark.parametrize('ref, where, read, note', [
    ('ABS', None, 'ABS/config.json', ''),                                    # an absolute directory
    ('m', 'WORK', 'WORK/m/config.json', ''),                                # relative to the working directory
    ('org/m', 'WORK', 'HUB/models--org--m/snapshots/abc123/config.json', ''),  # a hub id through the cache
    ('org/other', 'WORK', None, 'org/other is no directory on this host and not in the Hugging Face cache HUB'),
    ('/nowhere', None, None, '/nowhere is no directory on this host: its config.json was not checked'),
])
def test_read_model_configs(tmp_path, ref, where, read, note):
    absolute = _model(tmp_path / 'abs')
    _model(tmp_path / 'work' / 'm')
    cache = _hub(tmp_path)
    names = {'ABS': str(absolute), 'WORK': str(tmp_path / 'work'), 'HUB': str(cache)}

    def named(text):
        for key, value in names.items():
            text = text.replace(key, value)
        return text
    found = sp.read_model_configs([named(ref)], str(tmp_path / 'work'), str(cache))[0]
    assert found['path'] == (named(read) if read else None)
    assert found['note'].startswith(named(note))
    if read:
        assert found['config'] == {'architectures': ['LlamaForCausalLM'], 'num_attention_heads': 64}
    else:
        assert found['config'] is None


def test_a_hub_revision_and_an_unreadable_config(tmp_path):
    cache = _hub(tmp_path, commit='c0ffee')
    assert sp.read_model_configs(['org/m'], '/', str(cache), 'c0ffee')[0]['config'] is not None
    assert sp.read_model_configs(['org/m'], '/', str(cache), 'v9')[0]['config'] is None
    bad = _model(tmp_path / 'bad', u'{not json')
    assert 'is not JSON' in sp.read_model_configs([str(bad)], '/', '')[0]['note']
    assert sp.read_model_configs(['', None], '/', '') == []


def test_read_registry_from_the_source_files(tmp_path):
    site = tmp_path / 'lib' / 'python3.12' / 'site-packages'
    models = site / 'sglang' / 'srt' / 'models'
    models.mkdir(parents=True)
    (models / 'llama.py').write_text(u'class LlamaForCausalLM:\n    pass\n\nEntryClass = [LlamaForCausalLM]\n')
    (models / 'registry.py').write_text(u'if hasattr(module, "EntryClass"):\n    entry = module.EntryClass\n')
    auto = site / 'transformers' / 'models' / 'auto'
    auto.mkdir(parents=True)
    (auto / 'modeling_auto.py').write_text(u'NAMES = [("new", "NewForCausalLM")]\n')
    found = sp.read_registry([str(tmp_path / 'lib' / 'python*' / 'site-packages')], ['LlamaForCausalLM', 'NewForCausalLM'])
    assert found == {'sglang_models': str(models), 'sglang': {'LlamaForCausalLM': True, 'NewForCausalLM': False},
                     'transformers_auto': str(auto / 'modeling_auto.py'),
                     'transformers': {'LlamaForCausalLM': False, 'NewForCausalLM': True}}
    assert sp.read_registry([str(tmp_path / 'none')], ['LlamaForCausalLM']) == {
        'sglang_models': None, 'sglang': None, 'transformers_auto': None, 'transformers': None}


def test_observe_reads_the_models_and_the_registry_of_their_architectures(tmp_path):
    model = _model(tmp_path / 'm')
    seen = sp.observe({'working_directory': str(tmp_path), 'model_refs': [str(model)], 'sglang_site': []},
                      lambda argv: 0)
    assert seen['model_configs'][0]['config']['architectures'] == ['LlamaForCausalLM']
    assert seen['registry']['sglang'] is None


def test_observe_has_the_service_user_read_a_model_from_the_hub_cache(tmp_path):
    """Issue 28, item 5: a model found in the Hugging Face cache must be readable by the service user too (a cache
    carried over from a hand-started server's HOME can sit under a closed home)."""
    cache = _hub(tmp_path)
    tried = []

    def run(argv):
        tried.append(argv[-1])
        return 1 if '/snapshots/' in argv[-1] else 0
    seen = sp.observe({'working_directory': '/', 'model_refs': ['org/m', '/models/none'], 'hub_cache': str(cache),
                       'user': 'nobody', 'sglang_site': []}, run)
    snapshot = str(cache / 'models--org--m' / 'snapshots' / 'abc123' / 'config.json')
    assert seen['unreadable'] == [snapshot]
    assert snapshot in tried
    failed = sp.failures(seen, {'user': 'nobody', 'working_directory': '/'})
    assert [entry['check'] for entry in failed if snapshot in entry['message']] == [sp.CHECK_USER_READS]
    assert 'Hugging Face cache' in [entry['message'] for entry in failed if entry['check'] == sp.CHECK_USER_READS][0]
    assert sp.hub_targets(seen['model_configs'], '') == []
