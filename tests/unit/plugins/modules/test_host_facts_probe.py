# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_facts' endpoint probe over https and with a proxy in the environment (the plain cases are in
test_host_facts.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


import pytest

from ansible_collections.inferops.sglang.plugins.modules.host_facts import probe_endpoint
from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils import http_servers as servers


@pytest.fixture(scope='module', name='cert')
def fixture_cert(tmp_path_factory):
    return servers.make_cert(tmp_path_factory.mktemp('tls'))


def test_https_probe(cert):
    server = servers.serve(servers.FakeSGLang, *cert)
    try:
        result = probe_endpoint('0.0.0.0', server.port, 5, scheme='https', ca_path=cert[0])
        assert result['listening'] is True and result['health_status'] == 200 and result['error'] is None
        result = probe_endpoint('0.0.0.0', server.port, 5, scheme='https')
        assert result['health_status'] is None and 'certificate verify failed' in result['error']
        result = probe_endpoint('0.0.0.0', server.port, 5, scheme='https', validate_certs=False)
        assert result['health_status'] == 200
    finally:
        server.stop()


def test_the_probe_of_a_local_server_ignores_the_proxy(monkeypatch):
    proxy = servers.serve(servers.Refuse502)
    server = servers.serve(servers.FakeSGLang)
    try:
        for name in ('no_proxy', 'NO_PROXY'):
            monkeypatch.delenv(name, raising=False)
        for name in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY'):
            monkeypatch.setenv(name, proxy.url)
        result = probe_endpoint('127.0.0.1', server.port, 5)
        assert result['health_status'] == 200
        assert proxy.seen == []
    finally:
        proxy.stop()
        server.stop()
