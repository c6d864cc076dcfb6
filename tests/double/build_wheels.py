"""Build the SGLang test double as wheels that pip installs, one per version.

    python3 build_wheels.py --out WHEELHOUSE [--versions 0.5.9 0.5.10 0.5.10.post1]

Writes ``WHEELHOUSE/sglang-<version>-py3-none-any.whl`` for each version (by
default ``sglang.version.BUILDS``: 0.5.9, 0.5.10 and 0.5.10.post1, the build
whose server never gets healthy; README.md, "Versions"). Each wheel holds the
``sglang`` package with ``sglang/version.py`` saying that version, and
``sglang-<version>.dist-info`` (METADATA, WHEEL, entry_points.txt with the
``sglang`` console script, top_level.txt, RECORD with sha256 hashes), and the
ninja stand-in's wheel ``ninja-1.11.1.4-py3-none-any.whl`` (its ``bin/ninja``
answers ``--version``), which every sglang wheel requires as real SGLang
requires the ninja package. A venv
then installs one offline:

    python3 -m venv /opt/sglang/venvs/0.5.10
    /opt/sglang/venvs/0.5.10/bin/pip install --no-index --find-links WHEELHOUSE sglang==0.5.10

Wheels are reproducible (fixed timestamps and modes): a rebuild of unchanged
sources gives the same bytes. Prints one line per wheel ("changed:" or "ok:")
and a final JSON line ``{"changed": true|false, "wheels": [...]}``.
Standard library only; Python 3.8+.
"""

import argparse
import io
import json
import os
import sys
import zipfile

import sglang_dist

# 1980-01-01, the earliest time a zip entry can hold: the same bytes on every build.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


# The ninja stand-in's distribution (sglang_dist.NINJA_STUB as its bin/ninja script), which the sglang wheels require
# as real SGLang requires the ninja package.
NINJA_VERSION = "1.11.1.4"


def wheel_name(version: str, name: str = "sglang") -> str:
    return "%s-%s-py3-none-any.whl" % (name, version)


def _zip(files) -> bytes:
    """A wheel's bytes from [(path, data)], the RECORD last; files under ``*.data/scripts/`` are executable."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files:
            info = zipfile.ZipInfo(path, date_time=_ZIP_TIME)
            info.external_attr = (0o100755 if ".data/scripts/" in path else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()


def _with_record(files, dist_info):
    record_path = dist_info + "/RECORD"
    return files + [(record_path, sglang_dist.record_text(files, record_path).encode("utf-8"))]


def wheel_bytes(version: str) -> bytes:
    """The wheel of ``version`` as bytes (ValueError for a version the double cannot play)."""
    files = sglang_dist.package_files(version)
    dist_info = sglang_dist.dist_info_name(version)
    files += [("%s/%s" % (dist_info, name), text.encode("utf-8"))
              for name, text in sorted(sglang_dist.dist_info_files(version, requires=("ninja",)).items())]
    return _zip(_with_record(files, dist_info))


def ninja_wheel_bytes() -> bytes:
    """The ninja stand-in's wheel: ``bin/ninja`` (installed from the wheel's data scripts) and its metadata."""
    dist_info = "ninja-%s.dist-info" % NINJA_VERSION
    files = [
        ("ninja-%s.data/scripts/ninja" % NINJA_VERSION, sglang_dist.NINJA_STUB.encode("utf-8")),
        (dist_info + "/METADATA", ("Metadata-Version: 2.1\nName: ninja\nVersion: %s\n"
                                   "Summary: ninja stand-in of the inferops SGLang test double (--version only)\n"
                                   % NINJA_VERSION).encode("utf-8")),
        (dist_info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: inferops-sglang-double\nRoot-Is-Purelib: true\n"
                               b"Tag: py3-none-any\n"),
    ]
    return _zip(_with_record(files, dist_info))


def _write(path: str, data: bytes) -> bool:
    if os.path.isfile(path):
        with open(path, "rb") as f:
            if f.read() == data:
                return False
    tmp = path + ".inferops-tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return True


def write_wheel(out_dir: str, version: str) -> bool:
    """Write the wheel of ``version`` into ``out_dir``; True when the file changed."""
    return _write(os.path.join(out_dir, wheel_name(version)), wheel_bytes(version))


def main(argv=None):
    builds = sglang_dist.version_module().BUILDS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--out", required=True, help="wheelhouse directory (created if missing)")
    parser.add_argument("--versions", nargs="+", default=list(builds), metavar="VERSION",
                        help="versions to build, N.N.N or N.N.N.postN (default: %s)" % " ".join(builds))
    args = parser.parse_args(argv)
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    changed, wheels = [], []
    for version in args.versions:
        try:
            did_change = write_wheel(out_dir, version)
        except ValueError as exc:
            parser.error(str(exc))
        path = os.path.join(out_dir, wheel_name(version))
        print("%s: %s" % ("changed" if did_change else "ok", path))
        wheels.append(path)
        if did_change:
            changed.append(path)
    ninja = os.path.join(out_dir, wheel_name(NINJA_VERSION, "ninja"))
    did_change = _write(ninja, ninja_wheel_bytes())
    print("%s: %s" % ("changed" if did_change else "ok", ninja))
    wheels.append(ninja)
    if did_change:
        changed.append(ninja)
    print(json.dumps({"changed": bool(changed), "changed_paths": changed, "wheels": wheels}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
