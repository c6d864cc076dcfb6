"""Multi-node rendezvous of the test double (stands in for torch.distributed's TCPStore on --dist-init-addr).

Real SGLang with ``--nnodes N`` starts ``torch.distributed`` on ``--dist-init-addr host:port``: node rank 0
serves a TCP store there and every rank blocks until all N joined; a missing rank makes the others wait
until the store's timeout and fail. The double does the same on a plain TCP socket: rank 0 listens on
the address's port (all interfaces) and waits for N-1 peers to send their rank; each rank >= 1 connects
(retrying while rank 0 is not listening yet), sends its rank and waits for rank 0's ``go``.
``SGLANG_DOUBLE_RENDEZVOUS_TIMEOUT`` (seconds, default 60) bounds the wait; then the launch fails with
torch's message. ``abort_check`` is called while waiting; a non-None answer aborts (stop during load).
"""
from __future__ import annotations

import socket
import time
from typing import Callable, Dict, List, Optional, Tuple


class RendezvousTimeout(RuntimeError):
    pass


class RendezvousAborted(RuntimeError):
    pass


def split_addr(addr: str) -> Tuple[str, int]:
    """'10.0.0.1:20000' -> ('10.0.0.1', 20000); '[::1]:20000' -> ('::1', 20000)."""
    host, dummy, port = addr.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError("--dist-init-addr must be host:port, not %r" % addr)
    return host.strip("[]"), int(port)


def _check(abort_check: Callable[[], Optional[str]], deadline: float, timeout_message: str) -> None:
    """Raise RendezvousAborted when abort_check answers, RendezvousTimeout once the deadline passed."""
    reason = abort_check()
    if reason:
        raise RendezvousAborted(reason)
    if time.time() >= deadline:
        raise RendezvousTimeout(timeout_message)


def rendezvous(addr: str, nnodes: int, node_rank: int, timeout: float,
               abort_check: Callable[[], Optional[str]]) -> Dict[str, object]:
    host, port = split_addr(addr)
    t0 = time.time()
    deadline = t0 + timeout
    if node_rank == 0:
        peers = _serve(port, nnodes, deadline, timeout, abort_check)
    else:
        peers = [_join(host, port, node_rank, deadline, timeout, abort_check)]
    return {"addr": addr, "nnodes": nnodes, "node_rank": node_rank, "peers": peers,
            "seconds": round(time.time() - t0, 3)}


def _serve(port: int, nnodes: int, deadline: float, timeout: float,
           abort_check: Callable[[], Optional[str]]) -> List[int]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", port))
    listener.listen(nnodes)
    listener.settimeout(0.2)
    joined: Dict[int, socket.socket] = {}
    try:
        while len(joined) < nnodes - 1:
            _check(abort_check, deadline,
                   "torch.distributed.DistStoreError: Timed out after %d seconds waiting for clients. "
                   "%d/%d clients joined." % (timeout, len(joined) + 1, nnodes))
            try:
                conn = listener.accept()[0]
            except socket.timeout:
                continue
            conn.settimeout(5)
            try:
                rank = int(conn.recv(16).decode().strip() or -1)
            except (OSError, ValueError):
                conn.close()
                continue
            if 1 <= rank < nnodes:
                old = joined.pop(rank, None)
                if old is not None:
                    old.close()
                joined[rank] = conn
            else:
                conn.close()
        for conn in joined.values():
            try:
                conn.sendall(b"go\n")
            except OSError:
                pass
        return sorted(joined)
    finally:
        for conn in joined.values():
            conn.close()
        listener.close()


def _join(host: str, port: int, node_rank: int, deadline: float, timeout: float,
          abort_check: Callable[[], Optional[str]]) -> int:
    while True:
        _check(abort_check, deadline,
               "torch.distributed.DistNetworkError: The client socket has timed out after %d seconds "
               "while trying to connect to (%s, %d)." % (timeout, host, port))
        try:
            conn = socket.create_connection((host, port), timeout=2)
        except OSError:
            time.sleep(0.2)
            continue
        try:
            conn.sendall(b"%d\n" % node_rank)
            conn.settimeout(0.2)
            while True:
                _check(abort_check, deadline,
                       "torch.distributed.DistStoreError: Timed out after %d seconds waiting for the "
                       "other ranks at %s:%d." % (timeout, host, port))
                try:
                    data = conn.recv(16)
                except socket.timeout:
                    continue
                if data.startswith(b"go"):
                    return 0
                break  # rank 0 went away: connect again
        finally:
            conn.close()
        time.sleep(0.2)
