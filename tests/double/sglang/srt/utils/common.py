"""Process plumbing shared by every process of the SGLang test double.

Process titles, the parent-death signal, SGLang-style logging, the state files
that tests read, /proc scans (process tree, device-file holders) and the
``SGLANG_DOUBLE_*`` knobs. Standard library only.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import logging
import logging.config
import os
import signal
import sys
import time
from typing import Dict, Iterable, List, Optional, Set, Tuple

from sglang.version import baked_fail_modes

logger = logging.getLogger("sglang.double")

KNOWN_FAIL_MODES = ("crash_during_load", "never_healthy", "child_ignores_sigterm", "health_500", "chat_hangs")


# --------------------------------------------------------------------------- knobs
def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        logger.warning("Ignoring %s=%r: not a number; using %s", name, raw, default)
        return default


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    return raw not in ("0", "false", "no", "off")


def fail_modes() -> Set[str]:
    """SGLANG_DOUBLE_FAIL's comma-separated modes, plus those built into this version."""
    raw = os.environ.get("SGLANG_DOUBLE_FAIL", "")
    return {m.strip() for m in raw.split(",") if m.strip()} | set(baked_fail_modes())


def state_root() -> str:
    return os.environ.get("SGLANG_DOUBLE_STATE_DIR") or "/run/sglang-double"


def gpu_dir() -> str:
    return os.environ.get("SGLANG_DOUBLE_GPU_DIR") or "/dev"


def gpu_device_path(gpu_id: int) -> str:
    return os.path.join(gpu_dir(), "nvidia%d" % gpu_id)


# --------------------------------------------------------------------------- titles
def read_cmdline(pid: int | str = "self") -> List[str]:
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return []
    if raw.endswith(b"\0"):
        raw = raw[:-1]
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0")] if raw else []


def _stat_fields(pid: int | str = "self") -> Optional[List[str]]:
    """Fields of /proc/<pid>/stat from field 3 (state) on; None if unreadable."""
    try:
        with open("/proc/%s/stat" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    close = raw.rfind(b")")
    if close < 0:
        return None
    return raw[close + 2:].decode("ascii", "replace").split()


def _overwrite_argv(title: str) -> bool:
    """Rewrite this process's argv area so /proc/<pid>/cmdline reads ``title``.

    The kernel exposes the area between arg_start and arg_end (fields 48 and
    49 of /proc/<pid>/stat). When the byte at arg_end-1 (the NUL that ended
    the last argument) is not NUL, the kernel assumes setproctitle(3) and
    returns the text from arg_start up to the first NUL: exactly the title.
    """
    fields = _stat_fields()
    if fields is None or len(fields) < 47:
        return False
    try:
        arg_start, arg_end = int(fields[48 - 3]), int(fields[49 - 3])
    except ValueError:
        return False
    size = arg_end - arg_start
    if arg_start <= 0 or size < 3:
        return False
    data = title.encode("utf-8")[: size - 2]
    buf = data + b"\0" * (size - len(data))
    buf = buf[:-1] + b"."  # the marker that tells the kernel argv was rewritten
    try:
        ctypes.memmove(arg_start, buf, size)
    except Exception:  # noqa: BLE001 - any ctypes failure means "cannot"
        return False
    return read_cmdline() == [data.decode("utf-8", "replace")]


def set_proc_title(title: str) -> str:
    """Title the process like the setproctitle package: argv area and comm.

    Returns "argv" when /proc/<pid>/cmdline now reads the title, "comm" when
    only /proc/<pid>/comm could be set, "" when neither worked.
    """
    done = "argv" if _overwrite_argv(title) else ""
    try:
        with open("/proc/self/comm", "w") as f:
            f.write(title[:15])
        done = done or "comm"
    except OSError:
        pass
    return done


# --------------------------------------------------------------------------- death signal
PR_SET_PDEATHSIG = 1


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def kill_itself_when_parent_died() -> bool:
    """SIGKILL this process when the thread that started it dies (as SGLang)."""
    if not sys.platform.startswith("linux"):
        return False
    return _libc().prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0


# --------------------------------------------------------------------------- logging
def configure_logger(log_level: str, prefix: str = "") -> None:
    """SGLang's format: ``[2026-11-30 05:00:00 TP0] message`` on stderr.

    As SGLang's ``configure_logger`` (0.5.9 and 0.5.23 ``python/sglang/srt/utils/common.py``): when
    ``SGLANG_LOGGING_CONFIG_PATH`` is set, that JSON file is loaded with ``logging.config.dictConfig`` instead
    (a missing file raises the same ``Exception``), and nothing else is configured.
    """
    config_path = os.environ.get("SGLANG_LOGGING_CONFIG_PATH")
    if config_path:
        if not os.path.exists(config_path):
            raise Exception(  # pylint: disable=broad-exception-raised  # as SGLang
                "Setting SGLANG_LOGGING_CONFIG_PATH from env with "
                f"{config_path} but it does not exist!"
            )
        with open(config_path, encoding="utf-8") as file:
            logging.config.dictConfig(json.loads(file.read()))
        return
    level = getattr(logging, str(log_level).upper(), logging.INFO)
    logging.basicConfig(
        level=level,
        format="[%(asctime)s" + prefix + "] %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        stream=sys.stderr,
        force=True,
    )


def uvicorn_logger() -> logging.Logger:
    """uvicorn's console format (``INFO:     ...``), on stderr."""
    log = logging.getLogger("uvicorn.error.double")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_UvicornFormatter())
        log.addHandler(handler)
        log.propagate = False
        log.setLevel(logging.INFO)
    return log


def access_logger() -> logging.Logger:
    """uvicorn's access log (``INFO:     127.0.0.1:5000 - "GET / HTTP/1.1" 200 OK``), on stdout."""
    log = logging.getLogger("uvicorn.access.double")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(_UvicornFormatter())
        log.addHandler(handler)
        log.propagate = False
        log.setLevel(logging.INFO)
    return log


class _UvicornFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return "%-9s %s" % (record.levelname + ":", record.getMessage())


# --------------------------------------------------------------------------- state files
def write_state(port: int, role: str, extra: Optional[dict] = None, argv: Optional[List[str]] = None) -> Optional[str]:
    """Write ``<state dir>/<port>/<role>.json`` atomically; never fails the caller."""
    cmdline = read_cmdline()
    record = {
        "role": role,
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "title": " ".join(cmdline),
        "comm": _read_comm(),
        "argv": argv if argv is not None else cmdline,
        "environ": dict(os.environ),
        "cwd": os.getcwd(),
        "started_at": _START_TIME,
        "written_at": time.time(),
    }
    if extra:
        record.update(extra)
    directory = os.path.join(state_root(), str(port))
    path = os.path.join(directory, role + ".json")
    try:
        os.makedirs(directory, exist_ok=True)
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "w") as f:
            json.dump(record, f, indent=1, sort_keys=True, default=str)
        os.replace(tmp, path)
    except OSError as exc:
        logger.warning("Cannot write state file %s: %s", path, exc)
        return None
    return path


_START_TIME = time.time()


def _read_comm(pid: int | str = "self") -> str:
    try:
        with open("/proc/%s/comm" % pid) as f:
            return f.read().rstrip("\n")
    except OSError:
        return ""


# --------------------------------------------------------------------------- /proc scans
def process_table() -> Dict[int, Tuple[int, str]]:
    """pid -> (ppid, state) for every visible process."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = _stat_fields(name)
        if not fields or len(fields) < 2:
            continue
        try:
            table[int(name)] = (int(fields[1]), fields[0])
        except ValueError:
            continue
    return table


def pid_alive(pid: int) -> bool:
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] not in ("Z", "X", "x")


def descendants(root: int) -> List[int]:
    """Living descendants of ``root``, parents before children."""
    table = process_table()
    children: Dict[int, List[int]] = {}
    for pid, (ppid, _state) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, queue = [], list(children.get(root, []))
    while queue:
        pid = queue.pop(0)
        if pid in found:
            continue
        found.append(pid)
        queue.extend(children.get(pid, []))
    return [p for p in found if pid_alive(p)]


def signal_pids(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def reap_children() -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def wait_gone(pids: Iterable[int], timeout: float) -> List[int]:
    """Wait until none of ``pids`` lives (zombies count as gone); return survivors."""
    pids = list(pids)
    deadline = time.monotonic() + timeout
    while True:
        reap_children()
        alive = [p for p in pids if pid_alive(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.02)


def terminate_pids(pids: Iterable[int], grace: float = 2.0) -> List[int]:
    """SIGTERM, wait ``grace`` seconds, SIGKILL the rest. Returns the SIGKILLed pids."""
    pids = [p for p in pids if p != os.getpid()]
    signal_pids(pids, signal.SIGTERM)
    survivors = wait_gone(pids, grace)
    if survivors:
        signal_pids(survivors, signal.SIGKILL)
        wait_gone(survivors, 2.0)
    return survivors


def kill_pids(pids: Iterable[int]) -> None:
    pids = list(pids)
    signal_pids(pids, signal.SIGKILL)
    wait_gone(pids, 2.0)


def device_holders(path: str) -> List[int]:
    """PIDs that have ``path`` open (by scanning /proc/*/fd symlinks)."""
    target = os.path.realpath(path)
    holders = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fd_dir = "/proc/%s/fd" % name
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(os.path.join(fd_dir, fd)) == target:
                    holders.append(int(name))
                    break
            except OSError:
                continue
    return sorted(holders)
