# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The service pre-flight's look at the host, in one module call (``inferops.sglang.service_preflight_info``).

Two halves. ``observe`` reads the host: the SGLang ``--config`` files, the model directories' ``config.json``,
the service user's passwd entry and groups, the GPU device nodes, what the service user can read (checked as that
user, with ``runuser``), the working directory and the free space of its file system. It changes nothing.
``failures`` is pure: from what ``observe`` saw and what the role wants, the list of every failed check, each a
``{'check': name, 'message': text}``. The names are the pre-flight's check names (``CHECKS``); the troubleshooting
page (docs/docsite/rst/troubleshooting.rst) has one entry for each.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import grp
import json
import os
import pwd
import stat

from ansible_collections.inferops.sglang.plugins.module_utils import _managed_files, _model_config

# The checks made here, by the name the pre-flight prints in front of each failure (one troubleshooting entry each).
CHECK_CONFIG = 'Check that the --config file can be read'
CHECK_MODELS = 'Check the model directories'
CHECK_USER = 'Check that the service user exists'
CHECK_USER_READS = 'Report what the service user cannot read'
CHECK_WORKDIR = 'Check that the working directory exists (or is the cache directory the role creates)'
CHECK_DISK = 'Check free disk space for caches'
CHECKS = (CHECK_CONFIG, CHECK_MODELS, CHECK_USER, CHECK_USER_READS, CHECK_WORKDIR, CHECK_DISK)

KIB_PER_GIB = 1048576
# A config.json is a few KiB; a larger one is read up to this (and is not JSON then: a note, no check).
CONFIG_JSON_MAX = 4 * 1048576
TRANSFORMERS_AUTO = 'transformers/models/auto/modeling_auto.py'


# ---- pure rules ---------------------------------------------------------------------------------------------------

def reader_of(user, exists):
    """The account whose access is checked for ``user``: itself when it exists, else ``nobody`` (what nobody can
    reach, a new system user can). ``None`` for root (root reads everything; nothing is checked)."""
    if user in ('root', '0', 0):
        return None
    return user if exists else 'nobody'


def readable_targets(interpreter, model_paths):
    """What the service user must read: the interpreter and each model directory's ``config.json`` (absolute
    paths, in that order)."""
    return [interpreter] + [model_config(path) for path in model_paths or []]


def hub_targets(model_configs, hub_cache):
    """The ``config.json`` of each model that :func:`read_model_configs` found in the Hugging Face cache
    ``hub_cache``: the service user must read it (and, through the snapshot's symlink, its blob) as root did."""
    prefix = hub_cache.rstrip('/') + '/'
    return [entry['path'] for entry in model_configs or []
            if hub_cache and isinstance(entry.get('path'), str) and entry['path'].startswith(prefix)]


def model_config(path):
    """``PATH/config.json``: the file that makes PATH a Hugging Face model directory."""
    return path.rstrip('/') + '/config.json' if path != '/' else '/config.json'


def free_gib(free_kib):
    """KiB as GiB, rounded to one decimal (as the message prints it)."""
    return round(free_kib / float(KIB_PER_GIB), 1)


def _failure(check, message):
    return {'check': check, 'message': message}


def failures(seen, wanted):
    """Every failed check: ``[{'check': name from CHECKS, 'message': text}]``, in the order of ``CHECKS``; empty
    when all pass.

    ``seen``: what ``observe`` returned (``config``, ``models``, ``user``, ``unreadable``, ``working_directory``,
    ``disk``). ``wanted``: the module's parameters (``host``: the inventory name the messages use; ``config``,
    ``user``, ``user_create``, ``cache_dir``, ``working_directory``, ``min_free_disk_gib`` in GiB). Each message
    names the cause and the fix."""
    found = []
    host = wanted.get('host') or 'this host'
    config = seen.get('config') or {}
    if config.get('path') and not config.get('readable'):
        found.append(_failure(CHECK_CONFIG, (
            'service_server_args.config names %s, which cannot be read on %s (SGLang would refuse to start: Config '
            'file not found). Fix the path (a relative one is taken from service_working_directory) or create the '
            'file.' % (config['path'], host))))
    for model in seen.get('models') or []:
        if not (model.get('exists') and model.get('readable')):
            found.append(_failure(CHECK_MODELS, (
                '%s/config.json does not exist or cannot be read: %s is not a model directory. Fix model-path / '
                'speculative-draft-model-path in service_server_args.' % (model['path'], model['path']))))
    user = seen.get('user') or {}
    name = wanted.get('user') or 'root'
    if reader_of(name, True) is not None and not wanted.get('user_create') and not user.get('exists'):
        found.append(_failure(CHECK_USER, (
            'The service user %s does not exist on %s. Create it, or set service_user_create to true (a system user '
            'with the home %s).' % (name, host, wanted.get('cache_dir') or '/nonexistent'))))
    unreadable = seen.get('unreadable') or []
    if unreadable:
        found.append(_failure(CHECK_USER_READS, (
            'The service user %s cannot read %s (a directory on the way is closed to it, e.g. /root is 0700). Move '
            'the venv, the models or the Hugging Face cache (HF_HOME in service_environment) where the user can read '
            'them (/opt, /srv), or open the directories to it, then run again.' % (name, ', '.join(unreadable)))))
    workdir = seen.get('working_directory') or {}
    path = wanted.get('working_directory')
    if not workdir.get('exists') and path != wanted.get('cache_dir'):
        found.append(_failure(CHECK_WORKDIR, (
            'The working directory %s does not exist on %s; create it or set service_working_directory (default: '
            '/root for root, else service_cache_dir, which the role creates).' % (path, host))))
    disk = seen.get('disk') or {}
    need = wanted.get('min_free_disk_gib') or 0
    if disk.get('free_kib') is not None and disk['free_kib'] < need * KIB_PER_GIB:
        found.append(_failure(CHECK_DISK, (
            '%s has %s GiB free; the server needs at least %s GiB for caches (service_min_free_disk_gib).'
            % (path, free_gib(disk['free_kib']), _number(need)))))
    return found


def _number(value):
    """10.0 as 10 (as YAML wrote it), 0.5 as 0.5."""
    return int(value) if float(value) == int(value) else value


# ---- reading the host (nothing is changed) ------------------------------------------------------------------------

def read_config(path):
    """``{'path', 'readable', 'content', 'error'}`` of an SGLang ``--config`` file; ``content`` is its text
    (``None`` when unreadable), ``error`` the OS error. ``path`` '' reads nothing (``readable`` false)."""
    if not path:
        return {'path': '', 'readable': False, 'content': None, 'error': None}
    try:
        with open(path, 'rb') as handle:
            data = handle.read()
    except (IOError, OSError) as exc:
        return {'path': path, 'readable': False, 'content': None, 'error': str(exc)}
    return {'path': path, 'readable': True, 'content': data.decode('utf-8', 'replace'), 'error': None}


def look_at_models(model_paths):
    """``[{'path', 'exists', 'readable'}]`` of each model directory's ``config.json`` (readable by this process)."""
    found = []
    for path in model_paths or []:
        target = model_config(path)
        found.append({'path': path, 'exists': os.path.exists(target), 'readable': os.access(target, os.R_OK)})
    return found


def _group_name(gid):
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def lookup_user(name):
    """The passwd entry and groups of ``name`` (what ``getent passwd`` and ``id -Gn`` print), as
    ``{'name', 'exists', 'uid', 'gid', 'home', 'shell', 'groups'}``; ``groups`` are names, the primary group first.
    root is not looked up (``exists`` true, no groups). A missing user has ``exists`` false."""
    if reader_of(name, True) is None:
        return {'name': name, 'exists': True, 'uid': 0, 'gid': 0, 'home': None, 'shell': None, 'groups': []}
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return {'name': name, 'exists': False, 'uid': None, 'gid': None, 'home': None, 'shell': None, 'groups': []}
    gids = [entry.pw_gid]
    try:
        gids.extend(gid for gid in os.getgrouplist(name, entry.pw_gid) if gid not in gids)
    except (AttributeError, OSError):
        pass
    return {'name': name, 'exists': True, 'uid': entry.pw_uid, 'gid': entry.pw_gid, 'home': entry.pw_dir,
            'shell': entry.pw_shell, 'groups': [_group_name(gid) for gid in gids]}


def gpu_devices(pattern='/dev/nvidia*'):
    """The GPU device nodes (not directories, links not followed) as ``[{'path', 'mode', 'pw_name', 'gr_name'}]``,
    ``mode`` as ``'0666'``, sorted by path: the shape ``gpu_device_access`` reads."""
    found = []
    for path in sorted(glob.glob(pattern)):
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            continue
        try:
            owner = pwd.getpwuid(info.st_uid).pw_name
        except KeyError:
            owner = str(info.st_uid)
        found.append({'path': path, 'mode': '%04o' % stat.S_IMODE(info.st_mode), 'pw_name': owner,
                      'gr_name': _group_name(info.st_gid)})
    return found


def unreadable_as(reader, paths, run):
    """The ``paths`` that ``reader`` cannot read, each tried as that user: ``runuser -u READER -- test -r PATH``.
    ``run(argv)`` runs a command and returns its exit status; anything but 0 counts as unreadable."""
    if reader is None:
        return []
    return [path for path in paths if run(['runuser', '-u', reader, '--', 'test', '-r', path]) != 0]


def disk_free(path):
    """``{'path', 'free_kib'}``: the space an unprivileged user may use (``df -Pk``'s Available) on the file
    system of ``path``, or of its nearest existing parent when it does not exist yet (the role creates it)."""
    probe = path or '/'
    while not os.path.exists(probe) and probe not in ('/', ''):
        probe = os.path.dirname(probe.rstrip('/')) or '/'
    try:
        info = os.statvfs(probe)
    except OSError:
        return {'path': probe, 'free_kib': None}
    return {'path': probe, 'free_kib': info.f_bavail * info.f_frsize // 1024}


def _hub_snapshot(repo_dir, revision):
    """The snapshot directory of ``revision`` (default ``main``) in a hub cache's repo directory: ``refs/REVISION``
    holds the commit, ``snapshots/COMMIT`` the files (huggingface_hub's cache layout); a commit hash names its
    snapshot directly. None when the cache has none."""
    revision = revision or 'main'
    ref = os.path.join(repo_dir, 'refs', revision)
    commit = revision
    if os.path.isfile(ref):
        try:
            with open(ref) as handle:
                commit = handle.read().strip()
        except (IOError, OSError):
            return None
    snapshot = os.path.join(repo_dir, 'snapshots', commit)
    return snapshot if commit and '/' not in commit and os.path.isdir(snapshot) else None


def read_model_configs(refs, working_directory, hub_cache, revision=None):
    """Each model reference (``model-path``, ``speculative-draft-model-path`` as given) with its ``config.json``, as
    ``[{'ref', 'path', 'config', 'note'}]``: ``path`` the file read (None when none), ``config`` its summary
    (:func:`_model_config.config_summary`; None when not read), ``note`` why not ('' when read).

    An absolute path is read as it is; a relative one from ``working_directory`` (as the server resolves it); a
    Hugging Face id that is no local directory through the hub cache (``hub_cache``, its ``revision`` or ``main``)."""
    found = []
    for ref in refs or []:
        if not ref:
            continue
        directory = ref if os.path.isabs(ref) else os.path.join(working_directory or '/', ref)
        note = ''
        if not os.path.isdir(directory):
            repo = _model_config.hub_repo_dir(hub_cache, ref) if not os.path.isabs(ref) else None
            snapshot = _hub_snapshot(repo, revision) if repo and os.path.isdir(repo) else None
            if snapshot is None:
                note = ('%s is no directory on this host%s: its config.json was not checked'
                        % (ref, (' and not in the Hugging Face cache %s' % hub_cache) if repo else ''))
                found.append({'ref': ref, 'path': None, 'config': None, 'note': note})
                continue
            directory = snapshot
        path = model_config(directory)
        try:
            with open(path, 'rb') as handle:
                data = json.loads(handle.read(CONFIG_JSON_MAX).decode('utf-8'))
        except (IOError, OSError) as exc:
            found.append({'ref': ref, 'path': path, 'config': None, 'note': '%s cannot be read: %s' % (path, exc)})
            continue
        except ValueError as exc:
            found.append({'ref': ref, 'path': path, 'config': None, 'note': '%s is not JSON: %s' % (path, exc)})
            continue
        found.append({'ref': ref, 'path': path, 'config': _model_config.config_summary(data), 'note': ''})
    return found


def _first_dir(patterns, relative):
    """The first existing ``PATTERN/relative`` of the site-packages patterns (globs), or None."""
    for pattern in patterns or []:
        for site in sorted(glob.glob(pattern)):
            target = os.path.join(site, relative)
            if os.path.exists(target):
                return target
    return None


def read_registry(sites, architectures):
    """Which of ``architectures`` the installed SGLang's model registry and Transformers' auto classes name, read from
    their source files (nothing is imported): ``{'sglang_models': dir or None, 'sglang': {name: bool} or None,
    'transformers_auto': file or None, 'transformers': {name: bool} or None}`` (None: not found on ``sites``, the
    server interpreter's site-packages directories, globs allowed)."""
    names = [name for name in architectures or [] if isinstance(name, str)]
    models = _first_dir(sites, 'sglang/srt/models')
    registered = None
    if models and os.path.isdir(models):
        registered = set()
        for path in sorted(glob.glob(os.path.join(models, '*.py'))):
            try:
                with open(path, 'rb') as handle:
                    text = handle.read().decode('utf-8', 'replace')
            except (IOError, OSError):
                continue
            if 'EntryClass' in text:
                registered.update(_model_config.entry_class_names(text))
        if not registered:
            models, registered = None, None
    auto = _first_dir(sites, TRANSFORMERS_AUTO)
    mapped = None
    if auto:
        try:
            with open(auto, 'rb') as handle:
                mapped = _model_config.transformers_names(handle.read().decode('utf-8', 'replace'))
        except (IOError, OSError):
            auto = None
    return {'sglang_models': models, 'sglang': None if registered is None else dict((n, n in registered) for n in names),
            'transformers_auto': auto, 'transformers': None if mapped is None else dict((n, n in mapped) for n in names)}


def observe(wanted, run):
    """Everything the pre-flight reads on the host, for ``failures``; ``wanted`` as there, plus ``adopted_config``,
    ``model_paths``, ``interpreter``, ``devices`` (bool), ``model_refs``, ``model_revision``, ``hub_cache`` and
    ``sglang_site`` (the models' config.json and the registry, for the plan's model checks), and ``paths`` (the files
    and directories the role renders: their state, ``_managed_files.path_state``). ``run(argv)`` runs a command (exit status)."""
    user = lookup_user(wanted.get('user') or 'root')
    workdir = wanted.get('working_directory') or '/'
    model_paths = wanted.get('model_paths') or []
    reader = reader_of(user['name'], user['exists'])
    model_configs = read_model_configs(wanted.get('model_refs'), workdir, wanted.get('hub_cache') or '',
                                       wanted.get('model_revision') or None)
    architectures = []
    for entry in model_configs:
        for name in (entry['config'] or {}).get('architectures') or []:
            if isinstance(name, str) and name not in architectures:
                architectures.append(name)
    return {
        'model_configs': model_configs,
        'registry': read_registry(wanted.get('sglang_site'), architectures) if architectures else
        {'sglang_models': None, 'sglang': None, 'transformers_auto': None, 'transformers': None},
        'config': read_config(wanted.get('config') or ''),
        'adopted_config': read_config(wanted.get('adopted_config') or ''),
        'models': look_at_models(model_paths),
        'user': user,
        'reader': reader,
        'unreadable': unreadable_as(reader, (readable_targets(wanted.get('interpreter'), model_paths)
                                             if wanted.get('interpreter') else [model_config(p) for p in model_paths])
                                    + hub_targets(model_configs, wanted.get('hub_cache') or ''), run),
        'gpu_devices': gpu_devices() if wanted.get('devices') else [],
        'working_directory': {'path': workdir, 'exists': os.path.isdir(workdir)},
        'disk': disk_free(workdir),
        'paths': dict((path, _managed_files.path_state(path)) for path in wanted.get('paths') or []),
    }
