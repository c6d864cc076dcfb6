# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers of the operator playbooks (rollback, restart, status).

- ``known_good_entry``: which known-good configuration a rollback puts back (the current one or a history entry).
- ``status_rows`` and ``text_table``: the status table of a fleet (one row per server).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import calendar
import hashlib
import json
import time

from ansible_collections.inferops.sglang.plugins.module_utils._secrets import redact_args
from ansible_collections.inferops.sglang.plugins.module_utils._server_args import argv_to_args, diff_args
from ansible_collections.inferops.sglang.plugins.module_utils import _versions

CURRENT = 'current'


def _entry_name(path):
    return str(path).rstrip('/').rsplit('/', 1)[-1]


def known_good_entry(requested, current, history):
    """The known-good configuration to roll back to.

    :param requested: '' or None or ``'current'`` for the current known-good configuration; else the name of a
        history entry (the directory name under ``history/``, e.g. ``20261201T031500123456Z``) or its full path.
    :param current: the known_good role's output ``inferops_sglang_known_good`` (``exists``, ``dir``,
        ``history_dir``).
    :param history: paths (or names) of the history entries, any order.
    :returns: dict ``name`` (``'current'`` or the entry's name), ``dir`` (its directory on the host; None when not
        found), ``current`` (bool), ``available`` (``'current'`` when there is one, then the history entries,
        newest first) and ``error`` - empty when found, else why not (there is no current known-good configuration
        and it was asked for, or no history entry has the name asked for), naming the entries there are.
    """
    current = current or {}
    history_dir = current.get('history_dir') or ''
    entries = dict((_entry_name(path), path if '/' in str(path) else '%s/%s' % (history_dir, path))
                   for path in history or [])
    names = sorted(entries, reverse=True)
    available = ([CURRENT] if current.get('exists') else []) + names
    listing = ', '.join(available) if available else 'none - run the site playbook first'
    wanted = _entry_name(requested) if requested not in (None, '') else CURRENT
    result = {'name': wanted, 'dir': None, 'current': wanted == CURRENT, 'available': available, 'error': ''}
    if wanted == CURRENT:
        if current.get('exists'):
            result['dir'] = current.get('dir')
        else:
            result['error'] = ('There is no current known-good configuration in %s to roll back to; available: %s.'
                               % (current.get('dir') or 'the known-good directory', listing))
    elif wanted in entries:
        result['dir'] = entries[wanted]
    else:
        result['error'] = ('There is no known-good history entry %r in %s; available: %s. Set '
                           'inferops_sglang_rollback_to to one of them, or leave it empty for the current one.'
                           % (str(requested), history_dir or 'the history directory', listing))
    return result


def args_digest(args):
    """A short digest of server arguments: the same arguments give the same digest on every host.

    :param args: argv words (a list, as ``servers[].args`` of the facts) or a mapping (as from ``argv_to_args``).
    :returns: the first 12 hex digits of the SHA-256 of the arguments as JSON (flags with ``_`` read as ``-``,
        sorted, values as text), or ``'-'`` for none (``None``).
    """
    if args is None:
        return '-'
    mapping = argv_to_args(args) if isinstance(args, (list, tuple)) else dict(args)
    normal = dict((str(k).replace('_', '-'), v if isinstance(v, (list, bool)) else str(v)) for k, v in mapping.items())
    text = json.dumps(normal, sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]


def age_text(seconds):
    """``seconds`` as a short age: ``42s``, ``7m 3s``, ``5h 12m``, ``2d 3h``; ``'-'`` for None or a negative age."""
    if seconds is None or seconds < 0:
        return '-'
    seconds = int(seconds)
    for unit, size, sub, sub_size in (('d', 86400, 'h', 3600), ('h', 3600, 'm', 60), ('m', 60, 's', 1)):
        if seconds >= size:
            return '%d%s %d%s' % (seconds // size, unit, (seconds % size) // sub_size, sub)
    return '%ds' % seconds


def _epoch(utc_text):
    """``2026-12-01T03:15:00Z`` -> epoch seconds; None when it does not parse."""
    try:
        return calendar.timegm(time.strptime(str(utc_text), '%Y-%m-%dT%H:%M:%SZ'))
    except (TypeError, ValueError):
        return None


def _running_server(facts, port):
    servers = list((facts or {}).get('servers') or [])
    managed = [s for s in servers if s.get('managed')]
    on_port = [s for s in servers if port is not None and s.get('port') == port]
    for choice in (managed, on_port, servers):
        if choice:
            return choice[0]
    return None


def _health_text(health):
    if not health:
        return 'not probed'
    if health.get('state') == 'ready':
        return 'healthy'
    reason = ' '.join(str(health.get('reason') or health.get('msg') or 'no answer').split())
    return 'unhealthy (%s)' % reason


# SGLang 0.5.23 python/sglang/srt/server_args.py: --tp-size (alias --tensor-parallel-size), --pp-size
# (--pipeline-parallel-size), --dp-size (--data-parallel-size), each 1 when not given; --model-path (alias --model);
# argparse also takes an unambiguous prefix (--tp).
LAYOUT_FLAGS = (('tp-size', 'tensor-parallel-size', 'tp'), ('pp-size', 'pipeline-parallel-size', 'pp'),
                ('dp-size', 'data-parallel-size', 'dp'))
MODEL_FLAGS = ('model-path', 'model')


def _flag_map(args):
    """Argv words or a mapping as a mapping with ``-`` for ``_`` in the flags."""
    mapping = argv_to_args(args) if isinstance(args, (list, tuple)) else dict(args or {})
    return dict((str(k).replace('_', '-'), v) for k, v in mapping.items())


def _first(flags, names, missing):
    for name in names:
        if flags.get(name) not in (None, True, ''):
            return str(flags[name])
    return missing


def layout_text(args):
    """``tp x pp x dp`` of server arguments, e.g. ``8x1x1`` (each 1 when not given); ``-`` for None."""
    if args is None:
        return '-'
    flags = _flag_map(args)
    return 'x'.join(_first(flags, names, '1') for names in LAYOUT_FLAGS)


def model_text(args):
    """The model of server arguments (``--model-path``), ``-`` when none is known."""
    return '-' if args is None else _first(_flag_map(args), MODEL_FLAGS, '-')


def inventory_change(running, inventory):
    """What the inventory would change on a running server: ``diff_args`` of the running server's flags and the
    inventory's, over the flags the inventory sets (``removed`` is always {}: the service adds flags of its own -
    host, port, config - that the inventory does not set). A flag the inventory sets to false or null is absent.

    :param running: argv words (the facts' ``servers[].args`` or a known-good manifest's ``command``) or a mapping.
    :param inventory: the host's ``service_server_args`` (mapping).
    :returns: dict ``added``, ``removed``, ``changed``, ``unchanged_count`` (secret values masked).
    """
    have = redact_args(_flag_map(running))
    have.pop('', None)
    want = redact_args(dict((str(k).replace('_', '-'), v) for k, v in (inventory or {}).items()
                            if v is not False and v is not None))
    diff = diff_args(have, want)
    diff['removed'] = {}
    return diff


def drift_text(running, inventory):
    """How the inventory's server arguments differ from the running server's (str).

    :param running: the running server's argv words (the facts' ``servers[].args``) or mapping; None: none runs.
    :param inventory: the host's ``service_server_args`` (mapping flag -> value; None or {}: the inventory sets none).
    :returns: ``in line with the inventory``; ``inventory differs: mem-fraction-static 0.85 -> 0.88`` (the running
        value, then the inventory's; ``(not set)`` for a flag the running server lacks; several joined by ``, ``;
        secret values masked); ``-`` when no server runs or the inventory sets no argument. Only the flags the
        inventory sets are compared (the service adds its own: host, port, config).
    """
    if running is None or not inventory or not hasattr(inventory, 'items'):
        return '-'
    diff = inventory_change(running, inventory)
    texts = ['%s %s -> %s' % (flag, _show(pair['old']), _show(pair['new'])) for flag, pair in sorted(diff['changed'].items())]
    texts += ['%s (not set) -> %s' % (flag, _show(value)) for flag, value in sorted(diff['added'].items())]
    return 'inventory differs: %s' % ', '.join(texts) if texts else 'in line with the inventory'


def _show(value):
    if value is True:
        return 'on'
    if value is False:
        return 'off'
    if isinstance(value, (list, tuple)):
        return ' '.join(str(item) for item in value)
    return str(value)


def _router_text(router):
    if not router or router.get('skipped'):
        return '-'
    if router.get('routed') is False:
        return router.get('why') or 'not routed'
    if router.get('failed'):
        reason = ' '.join(str(router.get('msg') or 'no answer').split())
        return 'unknown (%s)' % (reason if len(reason) <= 60 else reason[:57] + '...')
    if router.get('operation') == 'add':
        return 'out'
    return 'in, healthy' if router.get('healthy') else 'in, not healthy'


def status_row(host, facts, known_good, probe, now, inventory_args=None):
    """One row of the status table.

    :param host: inventory name.
    :param facts: the host's ``ansible_facts['inferops_sglang']`` (``python.sglang_version``, ``servers``).
    :param known_good: the host's ``inferops_sglang_known_good`` (``exists``, ``manifest.saved_at``).
    :param probe: the cutover role's ``inferops_sglang_cutover_status`` (``port``, ``health`` - a server_health
        result, ``router`` - a router_worker result in check mode plus ``routed`` and ``why``).
    :param now: epoch seconds (the known-good age is counted to it).
    :param inventory_args: the host's ``service_server_args`` (None when the inventory sets none).
    :returns: dict ``host``, ``model`` and ``layout`` (``tp x pp x dp``, see ``model_text``, ``layout_text``),
        ``drift`` (``drift_text``), ``sglang`` (the running server's SGLang version, ``_versions.running_sglang_version``:
        the probed interpreter's, else the one the known-good manifest recorded for the running interpreter, else
        ``-``), ``args_digest`` (of the running server's
        arguments, see ``args_digest``; ``-`` when none runs), ``pid`` (its main pid or None), ``health``,
        ``router`` and ``known_good_age`` (texts), ``known_good_saved_at`` (UTC text or None).
    """
    facts = facts or {}
    probe = probe or {}
    manifest = (known_good or {}).get('manifest') or {}
    server = _running_server(facts, probe.get('port'))
    saved = _epoch(manifest.get('saved_at'))
    running = server.get('args') if server else None
    return {
        'host': host,
        'model': model_text(running),
        'layout': layout_text(running),
        'drift': drift_text(running, inventory_args),
        'sglang': _versions.running_sglang_version(facts, server.get('executable') if server else None,
                                                   (manifest.get('record') or {}).get('versions')) or '-',
        'args_digest': args_digest(server.get('args')) if server else '-',
        'pid': server.get('main_pid') if server else None,
        'health': _health_text(probe.get('health')) if probe else 'not probed',
        'router': _router_text(probe.get('router')),
        'known_good_age': age_text(now - saved) if saved is not None else 'none',
        'known_good_saved_at': manifest.get('saved_at'),
    }


def status_rows(hosts, data, now):
    """One row per host (``status_row``), in the order given.

    :param hosts: inventory names.
    :param data: dict host -> dict with ``facts``, ``known_good``, ``probe`` and ``inventory_args`` (see ``status_row``).
    :param now: epoch seconds.
    """
    data = data or {}
    rows = []
    for host in hosts:
        item = data.get(host) or {}
        rows.append(status_row(host, item.get('facts'), item.get('known_good'), item.get('probe'), now,
                               item.get('inventory_args')))
    return rows


def _history_changes(older, newer):
    """The flag and SGLang version changes from one kept configuration to the next (list of str)."""
    diff = diff_args(redact_args(_flag_map(argv_to_args(older.get('command') or []))),
                     redact_args(_flag_map(argv_to_args(newer.get('command') or []))))
    diff['added'].pop('', None)
    diff['removed'].pop('', None)
    diff['changed'].pop('', None)
    texts = ['%s %s -> %s' % (flag, _show(pair['old']), _show(pair['new'])) for flag, pair in sorted(diff['changed'].items())]
    texts += ['added %s' % flag for flag in sorted(diff['added'])]
    texts += ['removed %s' % flag for flag in sorted(diff['removed'])]
    old_version = ((older.get('record') or {}).get('versions') or {}).get('sglang')
    new_version = ((newer.get('record') or {}).get('versions') or {}).get('sglang')
    if old_version and new_version and old_version != new_version:
        texts.insert(0, 'SGLang %s -> %s' % (old_version, new_version))
    return texts


def history_rows(current, entries):
    """The known-good configurations an operator can roll back to, newest first: one row each (list of dict).

    :param current: the current known-good manifest (dict; {} or None when there is none).
    :param entries: dicts ``name`` (the history entry's directory name) and ``manifest`` (its manifest.json, {} when
        unreadable), any order; names written before issue 30 (by when they were replaced) are read the same way.
    :returns: dicts ``entry`` (``current`` or the name: what ``inferops_sglang_rollback_to`` takes), ``saved`` (the
        manifest's ``saved_at`` or ``-``), ``action`` (``rollback to ENTRY`` for a save of the rollback playbook,
        whose manifest names the entry in ``restored_from``, also a rollback to the hand-started configuration;
        ``hand-started server``; ``first kept``; ``adoption`` when the next older one is the hand-started server
        itself; against the next older one: ``upgrade``, ``change``, ``same configuration``; ``-`` when either
        manifest holds no command), ``sglang`` (the recorded version or ``-``),
        ``arguments`` (``model tp x pp x dp``) and ``changes`` (the flag and version changes against the next older
        one, ``; ``-joined, ``-`` when none).
    """
    kept = []
    if current:
        kept.append(('current', current))
    kept += [(entry.get('name'), entry.get('manifest') or {})
             for entry in sorted(entries or [], key=lambda entry: str(entry.get('name')), reverse=True)]
    rows = []
    for index, (name, manifest) in enumerate(kept):
        older = kept[index + 1][1] if index + 1 < len(kept) else None
        known = older is not None and bool(older.get('command')) and bool(manifest.get('command'))
        changes = _history_changes(older, manifest) if known else []
        if manifest.get('restored_from'):
            action = 'rollback to %s' % (manifest['restored_from'],)
        elif manifest.get('source') == 'hand-started':
            action = 'hand-started server'
        elif older is None:
            action = 'first kept'
        elif older.get('source') == 'hand-started' and not older.get('restored_from'):
            action = 'adoption'
        elif not known:
            action = '-'
        elif changes and changes[0].startswith('SGLang '):
            action = 'upgrade'
        else:
            action = 'change' if changes else 'same configuration'
        args = argv_to_args(manifest.get('command') or []) if manifest.get('command') else None
        rows.append({'entry': name, 'saved': manifest.get('saved_at') or '-', 'action': action,
                     'sglang': ((manifest.get('record') or {}).get('versions') or {}).get('sglang') or '-',
                     'arguments': '%s %s' % (model_text(args), layout_text(args)) if args is not None else '-',
                     'changes': '; '.join(changes) or '-'})
    return rows


HISTORY_COLUMNS = [['entry', 'entry'], ['saved', 'saved (UTC)'], ['action', 'action'], ['sglang', 'sglang'],
                   ['arguments', 'model tp x pp x dp'], ['changes', 'changes against the one before']]


def history_text(host, current, entries):
    """``history_rows`` as the text the status playbook's ``history`` view prints for one host (str, lines)."""
    rows = history_rows(current, entries)
    lines = ['known-good configurations of %s (newest first; roll back with -e inferops_sglang_rollback_to=ENTRY):' % host]
    lines += text_table(rows, HISTORY_COLUMNS) if rows else ['none kept']
    return '\n'.join(lines) + '\n'


def text_table(rows, columns):
    """Rows as a plain text table, one string per line: a header, a rule, then one line per row.

    :param rows: dicts.
    :param columns: list of ``[key, title]`` pairs (or keys alone) in the order to print.
    :returns: list of str; a missing value prints as ``-``; the columns are padded to the widest cell.
    """
    pairs = [(c, c) if isinstance(c, str) else (c[0], c[1]) for c in columns]
    cells = [[title for dummy, title in pairs]]
    for row in rows:
        cells.append(['-' if row.get(key) is None else str(row.get(key)) for key, dummy in pairs])
    widths = [max(len(line[i]) for line in cells) for i in range(len(pairs))]

    def line(values):
        return '  '.join(value.ljust(widths[i]) for i, value in enumerate(values)).rstrip()

    return [line(cells[0]), line(['-' * w for w in widths])] + [line(values) for values in cells[1:]]
