# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""make_certs.py DIR HOST...: a test CA (DIR/ca.pem) and, per host, DIR/HOST.crt and DIR/HOST.key valid for the
host's name, localhost and 127.0.0.1 (the collection probes a server on loopback). Uses `cryptography` (a
dependency of ansible-core). Existing files are kept. Both carry key identifiers: Python 3.13's ssl verifies with
VERIFY_X509_STRICT, which refuses a certificate without an Authority Key Identifier (Debian 13's python3)."""

import datetime
import ipaddress
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(common):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write(path, data):
    with open(path, "wb") as handle:
        handle.write(data)


def _pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def main(directory, hosts):
    os.makedirs(directory, exist_ok=True)
    if os.path.exists(os.path.join(directory, "ca.pem")):
        return 0
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("inferops secure scenario CA")).issuer_name(_name("inferops secure scenario CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=7))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    _write(os.path.join(directory, "ca.pem"), ca.public_bytes(serialization.Encoding.PEM))
    for host in hosts:
        key = ec.generate_private_key(ec.SECP256R1())
        names = [x509.DNSName(host), x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        cert = (x509.CertificateBuilder().subject_name(_name(host)).issuer_name(ca.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=7))
                .add_extension(x509.SubjectAlternativeName(names), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
                .sign(ca_key, hashes.SHA256()))
        _write(os.path.join(directory, host + ".crt"), cert.public_bytes(serialization.Encoding.PEM))
        _write(os.path.join(directory, host + ".key"), _pem_key(key))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
