"""Install the SGLang test double and GPU-host stand-ins on a target (run as root).

    python3 install.py --venv /root/ml-env [--gpus 8]
        [--cuda-root /usr/local/cuda-13.0] [--nvidia-smi /usr/local/bin/nvidia-smi]
        [--nvidia-smi-config /etc/inferops-nvidia-smi-standin.json]
        [--gpu-dir /dev] [--gpu-profile rtx-pro-6000-pcie]
        [--torch 2.9.1+cu130 [--torch-cuda 13.0]]

Always: the ``sglang`` package into the venv's site-packages, its
``sglang-0.5.9.dist-info`` (METADATA, RECORD, INSTALLER, entry_points.txt,
top_level.txt), ``<venv>/bin/sglang`` (console script) and ``<venv>/bin/ninja``
(a stub answering ``--version``). Only when the option is given: a CUDA 13.0
toolkit stand-in under --cuda-root, the nvidia-smi stand-in at --nvidia-smi
with its configuration file, the stand-in GPU device files in --gpu-dir, and
a torch stand-in (--torch): only what tells torch's version without importing
it, ``torch-<version>.dist-info`` and ``torch/version.py`` in torch's own
format; its ``torch/__init__.py`` raises ImportError, as no torch is there.
Not on a host whose venv reaches a real torch (it would shadow it).

Every step is idempotent: a file is rewritten only when its content or mode
differs, and a device node that is a real character device is left alone.
Prints one line per path ("changed:" or "ok:") and a final JSON summary line
``{"changed": true|false, ...}``. The venv must exist (``python3 -m venv``).
Standard library only; runs under Python 3.8+ and installs into a venv of
Python 3.8+.
"""

import argparse
import importlib.machinery
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys

import sglang_dist

HERE = os.path.dirname(os.path.abspath(__file__))
NVIDIA_SMI_SRC = os.path.join(HERE, "bin", "nvidia-smi")
VERSION = sglang_dist.source_version()
DEFAULT_SMI_CONFIG = "/etc/inferops-nvidia-smi-standin.json"

NINJA_STUB = sglang_dist.NINJA_STUB

NVCC_STUB = """#!/bin/sh
# nvcc stand-in (CUDA 13.0) installed by the inferops SGLang test double.
case "$1" in
  --version|-V)
    echo "nvcc: NVIDIA (R) Cuda compiler driver"
    echo "Copyright (c) 2005-2025 NVIDIA Corporation"
    echo "Built on Wed_Aug_20_01:58:59_PM_PDT_2025"
    echo "Cuda compilation tools, release 13.0, V13.0.88"
    echo "Build cuda_13.0.r13.0/compiler.36424714_0"
    exit 0 ;;
  "") echo "nvcc fatal   : No input files specified; use option --help for more information" >&2; exit 1 ;;
  *) echo "nvcc fatal   : this is a CUDA stand-in without a compiler (inferops test double)" >&2; exit 1 ;;
esac
"""

PTXAS_STUB = """#!/bin/sh
# ptxas stand-in (CUDA 13.0) installed by the inferops SGLang test double.
case "$1" in
  --version|-V)
    echo "ptxas: NVIDIA (R) Ptx optimizing assembler"
    echo "Copyright (c) 2005-2025 NVIDIA Corporation"
    echo "Built on Wed_Aug_20_01:55:37_PM_PDT_2025"
    echo "Cuda compilation tools, release 13.0, V13.0.88"
    echo "Build cuda_13.0.r13.0/compiler.36424714_0"
    exit 0 ;;
  *) echo "ptxas fatal   : this is a CUDA stand-in without an assembler (inferops test double)" >&2; exit 1 ;;
esac
"""

CUDA_VERSION_JSON = {
    "cuda": {"name": "CUDA SDK", "version": "13.0.2"},
    "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": "13.0.96"},
    "cuda_nvcc": {"name": "CUDA NVCC", "version": "13.0.88"},
    "libcublas": {"name": "CUDA cuBLAS", "version": "13.1.0.3"},
}

CONSOLE_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from sglang.cli import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
"""


class Installer:
    def __init__(self):
        self.changes = []
        self.unchanged = []

    # ---- primitives
    def _note(self, path, changed):
        (self.changes if changed else self.unchanged).append(path)
        print("%s: %s" % ("changed" if changed else "ok", path))

    def ensure_dir(self, path, mode=0o755, note=True):
        changed = False
        if not os.path.isdir(path):
            os.makedirs(path, mode)
            changed = True
        if note:
            self._note(path + "/", changed)
        return changed

    def ensure_file(self, path, content, mode=0o644, note=True):
        data = content.encode("utf-8") if isinstance(content, str) else content
        changed = False
        current = None
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as f:
                current = f.read()
        if current != data:
            self.ensure_dir(os.path.dirname(path), note=False)
            tmp = path + ".inferops-tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.chmod(tmp, mode)
            if os.path.islink(path) or os.path.isdir(path):
                _remove(path)
            os.replace(tmp, path)
            changed = True
        elif stat.S_IMODE(os.stat(path).st_mode) != mode:
            os.chmod(path, mode)
            changed = True
        if note:
            self._note(path, changed)
        return changed

    # ---- steps
    def package(self, site_packages):
        """Mirror the sglang package into site-packages; return its (RECORD path, bytes) list."""
        dest_root = os.path.join(site_packages, "sglang")
        files = sglang_dist.package_files()
        wanted = {os.path.join(*path.split("/")[1:]): data for path, data in files}
        changed = False
        for rel, data in sorted(wanted.items()):
            changed |= self.ensure_file(os.path.join(dest_root, rel), data, 0o644, note=False)
        # drop files that are no longer part of the package (keep __pycache__)
        if os.path.isdir(dest_root):
            for dirpath, dirnames, filenames in os.walk(dest_root, topdown=False):
                if "__pycache__" in dirpath.split(os.sep):
                    continue
                for name in filenames:
                    path = os.path.join(dirpath, name)
                    if os.path.relpath(path, dest_root) not in wanted:
                        os.remove(path)
                        changed = True
        self._note(dest_root + "/", changed)
        return files

    def dist_info(self, site_packages, records):
        for entry in os.listdir(site_packages):
            if entry.startswith("sglang-") and entry.endswith(".dist-info") and entry != "sglang-%s.dist-info" % VERSION:
                shutil.rmtree(os.path.join(site_packages, entry))
                self._note(os.path.join(site_packages, entry), True)
        name = sglang_dist.dist_info_name(VERSION)
        base = os.path.join(site_packages, name)
        files = sglang_dist.dist_info_files(VERSION)
        files["INSTALLER"] = "inferops-sglang-double\n"
        rows = list(records)
        for fname, text in sorted(files.items()):
            self.ensure_file(os.path.join(base, fname), text, 0o644)
            rows.append(("%s/%s" % (name, fname), text.encode()))
        self.ensure_file(os.path.join(base, "RECORD"), sglang_dist.record_text(rows, name + "/RECORD"), 0o644)

    def torch(self, site_packages, version, cuda):
        """A torch stand-in: metadata and torch/version.py as torch's wheels install them; import fails."""
        for entry in os.listdir(site_packages):
            if entry.startswith("torch-") and entry.endswith(".dist-info"):
                path = os.path.join(site_packages, entry)
                installer = os.path.join(path, "INSTALLER")
                ours = False
                if os.path.isfile(installer):
                    with open(installer) as f:
                        ours = f.read().strip() == "inferops-sglang-double"
                if not ours:
                    raise SystemExit("%s holds a real torch (%s): not replacing it with the stand-in" % (site_packages, entry))
                if entry != "torch-%s.dist-info" % version:
                    shutil.rmtree(path)
                    self._note(path, True)
        files = {
            "torch/__init__.py": "raise ImportError(\"torch stand-in of the inferops SGLang test double: only its version "
                                 "metadata is installed (no torch here)\")\n",
            "torch/version.py": "from typing import Optional\n\n"
                                "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']\n"
                                "__version__ = %r\ndebug = False\ncuda: Optional[str] = %r\ngit_version = 'Unknown'\n"
                                "hip: Optional[str] = None\nrocm: Optional[str] = None\nxpu: Optional[str] = None\n"
                                % (version, cuda or None),
        }
        info = "torch-%s.dist-info" % version
        files.update({
            info + "/METADATA": "Metadata-Version: 2.1\nName: torch\nVersion: %s\n"
                                "Summary: torch stand-in of the inferops SGLang test double (version metadata only)\n" % version,
            info + "/INSTALLER": "inferops-sglang-double\n",
            info + "/top_level.txt": "torch\n",
        })
        files[info + "/RECORD"] = sglang_dist.record_text(
            [(rel, text.encode()) for rel, text in sorted(files.items())], info + "/RECORD")
        for rel, text in sorted(files.items()):
            self.ensure_file(os.path.join(site_packages, rel), text, 0o644)

    def venv_scripts(self, venv):
        python = os.path.join(venv, "bin", "python3")
        if not os.path.exists(python):
            python = os.path.join(venv, "bin", "python")
        self.ensure_file(os.path.join(venv, "bin", "sglang"), CONSOLE_SCRIPT.format(python=python), 0o755)
        self.ensure_file(os.path.join(venv, "bin", "ninja"), NINJA_STUB, 0o755)

    def cuda(self, root):
        self.ensure_file(os.path.join(root, "bin", "nvcc"), NVCC_STUB, 0o755)
        self.ensure_file(os.path.join(root, "bin", "ptxas"), PTXAS_STUB, 0o755)
        self.ensure_dir(os.path.join(root, "lib64"))
        self.ensure_dir(os.path.join(root, "include"))
        self.ensure_file(os.path.join(root, "version.json"), json.dumps(CUDA_VERSION_JSON, indent=3) + "\n", 0o644)

    def nvidia_smi(self, path, config_path, gpus, profile, gpu_dir):
        with open(NVIDIA_SMI_SRC, "rb") as f:
            script = f.read()
        # the source starts "#!/bin/sh" + a line that re-execs python3 (ansible-test allows only a
        # few shebangs); installed, it gets the installing interpreter's absolute path instead
        script = b"#!" + sys.executable.encode() + script[script.index(b"\n"):]
        self.ensure_file(path, script, 0o755)
        profiles = _load_smi_module().PROFILES
        if profile not in profiles:
            raise SystemExit("unknown --gpu-profile %r (known: %s)" % (profile, ", ".join(sorted(profiles))))
        config = dict(profiles[profile])
        config.update({"profile": profile, "gpu_count": gpus, "device_dir": gpu_dir or "/dev",
                       "used_fraction": 0.88})
        self.ensure_file(config_path, json.dumps(config, indent=2, sort_keys=True) + "\n", 0o644)

    def gpu_devices(self, gpu_dir, gpus):
        self.ensure_dir(gpu_dir)
        for name in ["nvidia%d" % i for i in range(gpus)] + ["nvidiactl"]:
            path = os.path.join(gpu_dir, name)
            if os.path.exists(path) and stat.S_ISCHR(os.stat(path).st_mode):
                self._note(path, False)  # a real device: never touch it
                continue
            changed = False
            if not os.path.isfile(path):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o666)
                os.close(fd)
                changed = True
            if stat.S_IMODE(os.stat(path).st_mode) != 0o666:
                os.chmod(path, 0o666)
                changed = True
            self._note(path, changed)


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def _load_smi_module():
    loader = importlib.machinery.SourceFileLoader("inferops_nvidia_smi_standin", NVIDIA_SMI_SRC)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def venv_site_packages(venv):
    for candidate in ("python3", "python"):
        python = os.path.join(venv, "bin", candidate)
        if os.path.exists(python):
            break
    else:
        raise SystemExit("%s is not a virtual environment: %s/bin/python3 is missing "
                         "(create it with python3 -m venv)" % (venv, venv))
    out = subprocess.run(
        [python, "-I", "-c", "import sysconfig, sys; print(sysconfig.get_paths()['purelib']); "
                             "print('%d.%d' % sys.version_info[:2])"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
    )
    if out.returncode != 0:
        raise SystemExit("cannot run %s: %s" % (python, out.stderr.decode(errors="replace").strip()))
    purelib, pyver = out.stdout.decode().split()
    if tuple(int(x) for x in pyver.split(".")) < (3, 8):
        raise SystemExit("the venv's Python %s is too old (3.8+ needed)" % pyver)
    return purelib, pyver


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--venv", required=True, help="existing virtual environment (e.g. /root/ml-env)")
    parser.add_argument("--gpus", type=int, default=8, help="number of stand-in GPUs (default 8)")
    parser.add_argument("--cuda-root", help="install a CUDA 13.0 toolkit stand-in there")
    parser.add_argument("--nvidia-smi", help="install the nvidia-smi stand-in at this path")
    parser.add_argument("--nvidia-smi-config", default=DEFAULT_SMI_CONFIG,
                        help="configuration file of the nvidia-smi stand-in (default %(default)s)")
    parser.add_argument("--gpu-dir", help="create stand-in device files nvidia0..N-1 and nvidiactl there")
    parser.add_argument("--gpu-profile", default="rtx-pro-6000-pcie",
                        help="nvidia-smi profile: rtx-pro-6000-pcie (default) or h200-nvlink")
    parser.add_argument("--torch", help="install a torch stand-in of this version (metadata and torch/version.py only)")
    parser.add_argument("--torch-cuda", help="the stand-in's torch.version.cuda (default: none, a CPU build)")
    args = parser.parse_args(argv)
    if args.gpus < 0:
        parser.error("--gpus must be >= 0")
    if args.torch_cuda and not args.torch:
        parser.error("--torch-cuda needs --torch (the stand-in's version)")

    venv = os.path.abspath(args.venv)
    site_packages, pyver = venv_site_packages(venv)
    inst = Installer()
    inst.ensure_dir(site_packages)
    records = inst.package(site_packages)
    inst.dist_info(site_packages, records)
    inst.venv_scripts(venv)
    if args.torch:
        inst.torch(site_packages, args.torch, args.torch_cuda)
    if args.cuda_root:
        inst.cuda(os.path.abspath(args.cuda_root))
    if args.nvidia_smi:
        inst.nvidia_smi(os.path.abspath(args.nvidia_smi), os.path.abspath(args.nvidia_smi_config),
                        args.gpus, args.gpu_profile, os.path.abspath(args.gpu_dir) if args.gpu_dir else "/dev")
    if args.gpu_dir:
        inst.gpu_devices(os.path.abspath(args.gpu_dir), args.gpus)
    summary = {"changed": bool(inst.changes), "changed_paths": inst.changes, "venv": venv,
               "site_packages": site_packages, "python": pyver, "version": VERSION}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
