# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of modules/service_files.py: one call puts the service's files in place (issue 14), with backups,
check mode and diffs as ansible.builtin.template gives them, and the unit reloaded, enabled and measured."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import grp
import json
import os
import pwd
import shutil
import stat
import sys

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import patch_module_args
from ansible_collections.inferops.sglang.plugins.modules import service_files

USER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name
UNIT = u'[Unit]\nDescription=SGLang\n\n[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --port 30000\n'


class FakeSystemd(object):
    """systemctl and systemd-analyze as the module runs them; records each command line."""

    def __init__(self, enabled='enabled'):
        self.enabled = enabled
        self.calls = []
        self.verify = (0, '')     # systemd-analyze verify's exit status and output (it logs to standard error)
        self.verified = []        # (path, content) of each unit verified, read while verify runs

    def run_command(self, args, **kwargs):
        args = [os.path.basename(args[0])] + list(args[1:])
        self.calls.append(args)
        if args[:2] == ['systemd-analyze', 'security']:
            return 0, '→ Overall exposure level for %s: %s OK\n' % (args[-1], '2.1' if self.reloaded() else '9.6'), ''
        if args[:3] == ['systemd-analyze', '--man=no', 'verify']:
            with open(args[3]) as f:
                self.verified.append((args[3], f.read()))
            return self.verify[0], '', self.verify[1].replace('UNIT_PATH', args[3])
        if args[:2] == ['systemctl', 'is-enabled']:
            return (0 if self.enabled == 'enabled' else 1), self.enabled + '\n', ''
        if args[:1] == ['systemctl'] and args[1] in ('enable', 'disable'):
            self.enabled = args[1] + 'd'
        return 0, '', ''

    def reloaded(self):
        return ['systemctl', 'daemon-reload'] in self.calls


@pytest.fixture
def systemd(monkeypatch):
    fake = FakeSystemd()
    monkeypatch.setattr(AnsibleModule, 'run_command', lambda module, args, **kwargs: fake.run_command(args, **kwargs))
    monkeypatch.setattr(AnsibleModule, 'get_bin_path', lambda module, name, *a, **kw: '/usr/bin/' + name)
    return fake


def run(capsys, args, check=False, diff=False):
    with patch_module_args(dict(args, _ansible_check_mode=check, _ansible_diff=diff)):
        with pytest.raises(SystemExit):
            service_files.main()
    return json.loads(capsys.readouterr().out)


def unit_args(path, content=UNIT, **kwargs):
    return dict({'files': [{'path': str(path), 'content': content, 'owner': USER, 'group': GROUP, 'mode': '0644'}],
                 'systemd_unit': 'sglang.service', 'exposure': True, 'enabled': True}, **kwargs)


def test_a_converged_unit_is_one_call_that_changes_nothing(capsys, tmp_path, systemd):
    """The converged run: the unit is compared by checksum, nothing written, no reload, no enable; exposure measured once."""
    unit = tmp_path / 'sglang.service'
    unit.write_text(UNIT)
    os.chmod(str(unit), 0o644)
    out = run(capsys, unit_args(unit), diff=True)
    assert out['changed'] is False and out['files_changed'] is False and 'diff' not in out, out
    assert out['files'][0]['changed'] is False and out['files'][0]['checksum'] == service_files.checksum(UNIT.encode())
    assert out['enabled'] is True and out['enabled_now'] == 'enabled' and out['enabled_changed'] is False
    assert out['exposure'] == {'before': '→ Overall exposure level for sglang.service: 9.6 OK\n', 'after': None}
    assert ['systemctl', 'daemon-reload'] not in systemd.calls and not glob.glob(str(unit) + '.*~')


def test_a_changed_unit_is_backed_up_written_reloaded_and_measured_again(capsys, tmp_path, systemd):
    """C22: one changed flag - the unit is replaced (the old one kept as a backup), systemd reloads, the exposure is
    measured before and after, the diff shows the flag."""
    unit = tmp_path / 'sglang.service'
    unit.write_text(UNIT.replace('30000', '30001'))
    os.chmod(str(unit), 0o644)
    out = run(capsys, unit_args(unit), diff=True)
    assert out['changed'] is True and out['files_changed'] is True and out['daemon_reloaded'] is True
    assert unit.read_text() == UNIT
    backup = out['files'][0]['backup_file']
    assert glob.glob(str(unit) + '.*~') == [backup] and '30001' in open(backup).read()
    assert '--port 30001' in out['diff'][0]['before'] and '--port 30000' in out['diff'][0]['after']
    assert out['diff'][0]['before_header'] == str(unit)
    assert out['exposure']['before'].endswith('9.6 OK\n') and out['exposure']['after'].endswith('2.1 OK\n')
    assert systemd.calls.index(['systemctl', 'daemon-reload']) < systemd.calls.index(['systemctl', 'is-enabled', 'sglang.service'])


def test_check_mode_with_a_changed_unit_writes_nothing_shows_the_diff_and_reads_is_enabled(capsys, tmp_path, systemd):
    """--check --diff with a changed flag: the unit's diff, nothing written, no reload, no enable (only is-enabled read)."""
    unit = tmp_path / 'sglang.service'
    unit.write_text(UNIT.replace('30000', '30001'))
    systemd.enabled = 'disabled'
    out = run(capsys, unit_args(unit), check=True, diff=True)
    assert out['changed'] is True and out['files_changed'] is True and out['daemon_reloaded'] is False
    assert '30001' in unit.read_text() and not glob.glob(str(unit) + '.*~')
    assert '--port 30000' in out['diff'][0]['after']
    assert out['enabled_now'] == 'disabled' and out['enabled_changed'] is False and out['enabled'] is None
    assert out['exposure']['after'] is None
    assert [c for c in systemd.calls if c[0] == 'systemctl'] == [['systemctl', 'is-enabled', 'sglang.service']]


def test_a_new_unit_in_check_mode_is_reported_and_not_written(capsys, tmp_path, systemd):
    unit = tmp_path / 'sglang.service'
    out = run(capsys, unit_args(unit), check=True, diff=True)
    assert out['changed'] is True and not unit.exists()
    assert out['diff'][0]['before'] == '' and out['diff'][0]['after'] == UNIT


def test_a_disabled_unit_is_enabled(capsys, tmp_path, systemd):
    unit = tmp_path / 'sglang.service'
    unit.write_text(UNIT)
    os.chmod(str(unit), 0o644)
    systemd.enabled = 'disabled'
    planned = run(capsys, unit_args(unit), check=True)
    assert planned['changed'] is True and planned['enabled_changed'] is True and planned['files_changed'] is False
    assert systemd.enabled == 'disabled'
    done = run(capsys, unit_args(unit))
    assert done['changed'] is True and done['enabled'] is True and systemd.enabled == 'enabled'
    assert ['systemctl', 'daemon-reload'] not in systemd.calls


def test_a_secret_file_is_never_shown(capsys, tmp_path):
    """The environment file may hold secrets: no diff of it, and its content is not in the invocation either."""
    env = tmp_path / 'sglang.env'
    env.write_text(u'HF_TOKEN=hf_oldtoken\n')
    args = {'files': [{'path': str(env), 'content': u'HF_TOKEN=hf_newtoken\n', 'mode': '0600', 'diff': False}]}
    out = run(capsys, args, diff=True)
    assert out['changed'] is True and env.read_text() == u'HF_TOKEN=hf_newtoken\n'
    assert oct(os.stat(str(env)).st_mode & 0o777) == oct(0o600)
    assert "hf_" not in json.dumps(out), out
    assert 'diff' not in out


def test_attributes_alone_are_fixed(capsys, tmp_path):
    env = tmp_path / 'sglang.env'
    env.write_text(u'A=1\n')
    os.chmod(str(env), 0o644)
    out = run(capsys, {'files': [{'path': str(env), 'content': u'A=1\n', 'mode': '0600'}]})
    assert out['changed'] is True and out['files'][0]['content_changed'] is False and 'backup_file' not in out['files'][0]
    assert oct(os.stat(str(env)).st_mode & 0o777) == oct(0o600)
    again = run(capsys, {'files': [{'path': str(env), 'content': u'A=1\n', 'mode': '0600'}]})
    assert again['changed'] is False


def test_directories_are_created_with_their_parents_and_a_hand_over_is_reported(capsys, tmp_path):
    """A cache another user owned is reported for hand-over (the role then hands it over recursively)."""
    conf = tmp_path / 'etc' / 'sglang'
    args = {'directories': [{'path': str(conf), 'owner': USER, 'group': GROUP, 'mode': '0755'},
                            {'path': str(tmp_path), 'owner': 'inferops-nobody-such-user'}]}
    planned = run(capsys, dict(args, directories=args['directories'][:1]), check=True)
    assert planned['changed'] is True and not conf.exists()
    done = run(capsys, dict(args, directories=args['directories'][:1]))
    assert done['changed'] is True and conf.is_dir() and oct(os.stat(str(conf)).st_mode & 0o777) == oct(0o755)
    assert oct(os.stat(str(conf.parent)).st_mode & 0o777) == oct(0o755)
    assert done['directories'][0]['existed'] is False and done['directories'][0]['hand_over'] is False
    again = run(capsys, dict(args, directories=args['directories'][:1]))
    assert again['changed'] is False and again['directories'][0]['owner_before'] == USER


def test_hand_over_of_a_directory_another_user_owns(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(service_files, 'owner_name', lambda uid: 'root-before')
    out = run(capsys, {'directories': [{'path': str(tmp_path)}]}, check=True)
    assert out['directories'][0]['hand_over'] is False      # no owner wanted: nothing to hand over
    out = run(capsys, {'directories': [{'path': str(tmp_path), 'owner': USER}]}, check=True)
    assert out['directories'][0]['hand_over'] is True and out['directories'][0]['owner_before'] == 'root-before'


def test_an_absent_file_is_removed_and_then_left_alone(capsys, tmp_path):
    conf = tmp_path / 'sglang-secrets.yaml'
    conf.write_text(u'api-key: "x"\n')
    planned = run(capsys, {'files': [{'path': str(conf), 'state': 'absent'}]}, check=True)
    assert planned['changed'] is True and conf.exists()
    done = run(capsys, {'files': [{'path': str(conf), 'state': 'absent'}]})
    assert done['changed'] is True and not conf.exists() and done['files'][0]['checksum'] is None
    assert run(capsys, {'files': [{'path': str(conf), 'state': 'absent'}]})['changed'] is False


def test_errors_name_the_cause(capsys, tmp_path):
    out = run(capsys, {'files': [{'path': str(tmp_path)}]})
    assert out['failed'] and 'content is required' in out['msg']
    out = run(capsys, {'files': [{'path': str(tmp_path), 'content': 'x'}]})
    assert out['failed'] and 'is a directory' in out['msg']
    out = run(capsys, {'exposure': True})
    assert out['failed'] and 'need systemd_unit' in out['msg']
    out = run(capsys, {'files': [{'path': str(tmp_path / 'no' / 'such' / 'dir'), 'content': 'x'}]})
    assert out['failed'] and 'its directory must exist' in out['msg']


def test_diffs_of_directories_and_removals_show_states_never_contents(capsys, tmp_path):
    """--diff as ansible.builtin.file shows it: a directory created (absent -> directory), a file removed (file -> absent,
    not its content: the secret --config file), an attribute set."""
    conf = tmp_path / 'sglang-secrets.yaml'
    conf.write_text(u'api-key: "hf_secretvalue"\n')
    env = tmp_path / 'sglang.env'
    env.write_text(u'A=1\n')
    os.chmod(str(env), 0o644)
    args = {'directories': [{'path': str(tmp_path / 'supervisor.d'), 'mode': '0755'}],
            'files': [{'path': str(conf), 'state': 'absent'}, {'path': str(env), 'content': u'A=1\n', 'mode': '0600'}]}
    out = run(capsys, args, check=True, diff=True)
    assert out['diff'] == [
        {'before': {'path': str(tmp_path / 'supervisor.d'), 'state': 'absent'},
         'after': {'path': str(tmp_path / 'supervisor.d'), 'state': 'directory'}},
        {'before': {'path': str(conf), 'state': 'file'}, 'after': {'path': str(conf), 'state': 'absent'}},
        {'before': {'path': str(env), 'mode': '0644'}, 'after': {'path': str(env), 'mode': '0600'}}]
    assert 'hf_' not in json.dumps(out)


def test_an_absent_file_is_backed_up_with_its_mode_before_it_goes(capsys, tmp_path):
    """A file the collection stops managing (the secret --config file) is kept as PATH.PID.DATE@TIME~, mode kept."""
    conf = tmp_path / 'sglang-secrets.yaml'
    conf.write_text(u'api-key: "x"\n')
    os.chmod(str(conf), 0o600)
    planned = run(capsys, {'files': [{'path': str(conf), 'state': 'absent'}]}, check=True)
    assert 'backup_file' not in planned['files'][0] and not glob.glob(str(conf) + '.*~')
    done = run(capsys, {'files': [{'path': str(conf), 'state': 'absent'}]})
    backup = done['files'][0]['backup_file']
    assert glob.glob(str(conf) + '.*~') == [backup] and not conf.exists()
    assert open(backup).read() == u'api-key: "x"\n' and stat.S_IMODE(os.stat(backup).st_mode) == 0o600
    again = run(capsys, {'files': [{'path': str(conf), 'state': 'absent'}]})
    assert again['changed'] is False and 'backup_file' not in again['files'][0]
    gone = tmp_path / 'other.yaml'
    gone.write_text(u'x')
    out = run(capsys, {'files': [{'path': str(gone), 'state': 'absent', 'backup': False}]})
    assert 'backup_file' not in out['files'][0] and not glob.glob(str(gone) + '.*~')


def validated_unit(path, content=UNIT, **kwargs):
    return dict({'files': [{'path': str(path), 'content': content, 'validate': 'systemd-unit'}]}, **kwargs)


def test_a_unit_systemd_would_change_is_refused_before_anything_is_written(capsys, tmp_path, systemd):
    """systemd-analyze goes on (rc 0) after splitting ReadWritePaths= at a space: the module fails with its message,
    naming the unit's own path, and writes nothing - no directory, no unit, no reload."""
    unit = tmp_path / 'sglang.service'
    unit.write_text(UNIT.replace('30000', '30001'))
    systemd.verify = (0, 'UNIT_PATH:31: ReadWritePaths= path is not absolute, ignoring: work/modèles\n')
    args = validated_unit(unit, systemd_unit='sglang.service',
                          directories=[{'path': str(tmp_path / 'new')}])
    out = run(capsys, args)
    assert out['failed'] and "%s:31: ReadWritePaths= path is not absolute, ignoring: work/modèles" % unit in out['msg']
    assert 'systemd-analyze verify refuses %s' % unit in out['msg'] and 'inferops-sglang-validate' not in out['msg']
    assert '30001' in unit.read_text() and not (tmp_path / 'new').exists() and not glob.glob(str(unit) + '.*~')
    assert ['systemctl', 'daemon-reload'] not in systemd.calls
    # The tool read the wanted content under the unit's own name, in a private directory removed afterwards.
    (seen, content), = systemd.verified
    assert os.path.basename(seen) == 'sglang.service' and content == UNIT and not os.path.exists(os.path.dirname(seen))


def test_validation_runs_in_check_mode_and_notes_a_command_not_installed_yet(capsys, tmp_path, systemd):
    unit = tmp_path / 'sglang.service'
    systemd.verify = (1, 'sglang.service: Command /usr/bin/python3 is not executable: No such file or directory\n')
    out = run(capsys, validated_unit(unit), check=True)
    assert not out.get('failed') and out['changed'] is True and not unit.exists()
    assert out['validation'] == [{'path': str(unit), 'validate': 'systemd-unit', 'skipped': False,
                                  'notes': ['sglang.service: Command /usr/bin/python3 is not executable: No such file or directory'],
                                  'output': 'sglang.service: Command /usr/bin/python3 is not executable: No such file or directory'}]


def test_validation_is_skipped_with_a_note_without_systemd_analyze(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(AnsibleModule, 'get_bin_path', lambda module, name, *a, **kw: None)
    unit = tmp_path / 'sglang.service'
    out = run(capsys, validated_unit(unit))
    assert not out.get('failed') and unit.read_text() == UNIT
    assert out['validation'][0]['skipped'] is True and 'systemd-analyze is not installed' in out['validation'][0]['notes'][0]


@pytest.mark.skipif(not shutil.which('systemd-analyze'), reason='needs systemd-analyze')
def test_the_hosts_systemd_analyze_refuses_a_path_split_at_a_space_and_takes_it_quoted(capsys, tmp_path):
    """With the real tool: a working directory with a space, UTF-8 and a % (field case)."""
    unit = tmp_path / 'sglang.service'
    split = UNIT.replace('--port 30000\n', '--port 30000\nReadWritePaths=/srv/sglang work/modèles %%h\n')
    out = run(capsys, validated_unit(unit, split.replace('/usr/bin/python3', sys.executable)))
    assert out['failed'] and 'ReadWritePaths= path is not absolute, ignoring: work/modèles' in out['msg'], out
    assert not unit.exists()
    quoted = UNIT.replace('--port 30000\n', '--port 30000\nWorkingDirectory=/srv/sglang work/modèles %%h\n'
                                            'ReadWritePaths="/srv/sglang work/modèles %%h"\n')
    out = run(capsys, validated_unit(unit, quoted.replace('/usr/bin/python3', sys.executable)))
    assert not out.get('failed') and out['validation'][0]['notes'] == [], out


PROGRAM = u'''[program:sglang]
command=/usr/local/libexec/sglang-run
user=%s
directory=%s
stdout_logfile=%s/sglang.log
stopsignal=TERM
'''


def supervisor_importable():
    try:
        import supervisor  # noqa: F401 pylint: disable=unused-import,import-outside-toplevel
    except ImportError:
        return False
    return True


# The suite's .venv has supervisor (requirements-dev); ansible-test's own unit venv does not.
@pytest.mark.skipif(not supervisor_importable(), reason='needs the supervisor package next to this python')
def test_a_supervisor_program_is_checked_with_supervisors_own_parser(capsys, tmp_path):
    """The interpreter of the tests has supervisor (requirements-dev): a bare % is refused as supervisord refuses it at
    its start, %% is taken; a log directory not created yet is a note."""
    program = tmp_path / 'sglang.conf'
    bad = PROGRAM % (USER, u'/srv/sglang work/modèles %h', tmp_path)
    out = run(capsys, {'files': [{'path': str(program), 'content': bad, 'validate': 'supervisor-program'}],
                       'supervisor_python': sys.executable})
    assert out['failed'] and "supervisor's configuration parser refuses %s" % program in out['msg']
    assert 'badly formatted' in out['msg'] and not program.exists()
    good = PROGRAM % (u'sglang-not-created-yet', u'/srv/sglang work/modèles %%h', tmp_path / 'logs')
    out = run(capsys, {'files': [{'path': str(program), 'content': good, 'validate': 'supervisor-program'}],
                       'supervisor_python': sys.executable}, check=True)
    assert not out.get('failed'), out
    assert out['validation'][0]['notes'] == ['the directory %s does not exist yet' % (tmp_path / 'logs'),
                                             'the user sglang-not-created-yet does not exist yet']
    out = run(capsys, {'files': [{'path': str(program), 'content': good, 'validate': 'supervisor-program'}],
                       'supervisor_python': str(tmp_path / 'venv' / 'bin' / 'python')})
    assert not out.get('failed') and out['validation'][0]['skipped'] is True and program.read_text() == good
    out = run(capsys, {'files': [{'path': str(program), 'content': good, 'validate': 'supervisor-program'}]})
    assert out['failed'] and 'needs supervisor_python' in out['msg']


# ---- rendered_current (the filter the roles skip this module with) agrees with this module ----

from ansible_collections.inferops.sglang.plugins.module_utils import _managed_files  # noqa: E402  pylint: disable=wrong-import-position


def _tree(tmp_path):
    """A directory with an environment file and a logging configuration, as the service role renders them."""
    conf = tmp_path / 'etc'
    conf.mkdir()
    os.chmod(str(conf), 0o755)
    env = conf / 'sglang.env'
    env.write_text(u'PORT=30000\n')
    os.chmod(str(env), 0o600)
    log = conf / 'logging.json'
    log.write_text(u'{}\n')
    os.chmod(str(log), 0o644)
    return {'directories': [{'path': str(conf), 'owner': USER, 'group': GROUP, 'mode': '0755'}],
            'files': [{'path': str(env), 'content': u'PORT=30000\n', 'owner': USER, 'group': GROUP, 'mode': '0600'},
                      {'path': str(log), 'content': u'{}\n', 'owner': USER, 'group': GROUP, 'mode': '0644'},
                      {'path': str(conf / 'secrets.yaml'), 'state': 'absent'}]}


def _changes(tmp_path, name, wanted):
    """Apply the change NAME to the tree or to WANTED (as a host or an inventory would differ)."""
    env = wanted['files'][0]
    if name == 'content':
        env['content'] = u'PORT=31000\n'
    elif name == 'mode':
        os.chmod(env['path'], 0o644)
    elif name == 'directory mode':
        os.chmod(wanted['directories'][0]['path'], 0o700)
    elif name == 'file missing':
        os.unlink(wanted['files'][1]['path'])
    elif name == 'directory missing':
        wanted['directories'].append({'path': str(tmp_path / 'new'), 'mode': '0755'})
    elif name == 'absent file present':
        with open(wanted['files'][2]['path'], 'w') as handle:
            handle.write('api-key: x\n')
    elif name == 'owner':
        env['owner'] = 'root' if USER != 'root' else 'nobody'
    elif name == 'symlink for a file':
        os.unlink(env['path'])
        os.symlink(wanted['files'][1]['path'], env['path'])
    return wanted


CHANGES = ['none', 'content', 'mode', 'directory mode', 'file missing', 'directory missing', 'absent file present',
           'owner', 'symlink for a file']


@pytest.mark.parametrize('name', CHANGES)
def test_rendered_current_agrees_with_the_module(capsys, tmp_path, systemd, name):
    """Where rendered_current says True (from path_state read before), this module in check mode changes nothing;
    where it says False, the module would change something (a False is never a missed change)."""
    wanted = _changes(tmp_path, name, _tree(tmp_path))
    seen = dict((path, _managed_files.path_state(path))
                for path in [d['path'] for d in wanted['directories']] + [f['path'] for f in wanted['files']])
    current = _managed_files.rendered_current(wanted, seen)
    assert current is (name == 'none')
    out = run(capsys, wanted, check=True)
    assert out['changed'] is (not current), (name, out)


def test_rendered_current_is_conservative(tmp_path):
    """A path not read, an unknown state, a symbolic mode, an omitted owner placeholder, an owner given as a number
    (service_files would hand a directory over), an int mode (the module reads 420 as octal '420'): not current."""
    wanted = _tree(tmp_path)
    paths = [d['path'] for d in wanted['directories']] + [f['path'] for f in wanted['files']]
    seen = dict((path, _managed_files.path_state(path)) for path in paths)
    assert _managed_files.rendered_current(wanted, seen) is True
    assert _managed_files.rendered_current(wanted, dict(list(seen.items())[1:])) is False
    assert _managed_files.rendered_current(wanted, None) is False
    unreadable = dict(seen, **{paths[1]: dict(seen[paths[1]], checksum=None)})
    assert _managed_files.rendered_current(wanted, unreadable) is False
    wanted['files'][0]['mode'] = 'u=rw'
    assert _managed_files.rendered_current(wanted, seen) is False
    wanted['files'][0]['mode'] = '0600'
    wanted['files'][0]['owner'] = '__omit_place_holder__0123'
    assert _managed_files.rendered_current(wanted, seen) is False
    wanted['files'][0]['owner'] = str(os.getuid())
    assert _managed_files.rendered_current(wanted, seen) is False
    wanted['files'][0]['owner'] = USER
    wanted['files'][0]['mode'] = 0o600
    assert _managed_files.rendered_current(wanted, seen) is False
    wanted['files'][0]['mode'] = '600'
    assert _managed_files.rendered_current(wanted, seen) is True
    assert _managed_files.rendered_current({}, {}) is True


@pytest.mark.parametrize('wanted_enabled,unit,current', [
    (True, {'enabled': True}, True), (False, {'enabled': False}, True), (True, {'enabled': False}, False),
    (False, {'enabled': True}, False), (True, {}, False), (True, None, False), (True, {'enabled': 'enabled'}, False)])
def test_rendered_current_with_the_units_enablement(tmp_path, wanted_enabled, unit, current):
    """enabled in wanted (service_files' option): the unit as read must be enabled for boot as wanted; a unit not read
    (or read as anything but a bool) is not current, whatever the files say."""
    wanted = _tree(tmp_path)
    paths = [d['path'] for d in wanted['directories']] + [f['path'] for f in wanted['files']]
    seen = dict((path, _managed_files.path_state(path)) for path in paths)
    assert _managed_files.rendered_current(dict(wanted, enabled=wanted_enabled), seen, unit) is current
    assert _managed_files.rendered_current(wanted, seen, unit) is True  # no enabled wanted: the unit is not looked at


def test_path_state(tmp_path):
    assert _managed_files.path_state(str(tmp_path / 'none')) == {'exists': False}
    target = tmp_path / 'f'
    target.write_bytes(b'abc')
    os.chmod(str(target), 0o640)
    assert _managed_files.path_state(str(target)) == {
        'exists': True, 'kind': 'file', 'owner': USER, 'uid': str(os.getuid()), 'group': GROUP, 'gid': str(os.getgid()),
        'mode': '0640', 'checksum': service_files.checksum(b'abc')}
    os.symlink(str(target), str(tmp_path / 'link'))
    assert _managed_files.path_state(str(tmp_path / 'link'))['kind'] == 'other'
    assert _managed_files.path_state(str(tmp_path))['kind'] == 'directory'


@pytest.mark.parametrize('text,read,current', [('no', True, False), ('false', True, False), ('0', False, True),
                                               ('yes', True, True), ('True', False, False)])
def test_rendered_current_reads_enabled_as_the_module_does(tmp_path, text, read, current):
    """enabled given as text (service_files' own option takes 'no'): Ansible's truth rule, never Python's bool()."""
    assert _managed_files.rendered_current({'enabled': text}, {}, {'enabled': read}) is current
