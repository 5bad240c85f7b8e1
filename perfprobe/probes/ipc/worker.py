"""The worker end of `perfprobe ipc`: `python -m perfprobe.probes.ipc.worker FDS_JSON`.

Started by session.py with the transports' far ends inherited (pass_fds). It obeys one JSON line at
a time on the control socket: `pin` (CPU affinity), `echo` / `sink` (answer `ready`, then run the
compiled other half of a ping-pong or a stream), `quit`. It reports each kernel's error code and the
CPU time it used (getrusage). It dies with its parent (PR_SET_PDEATHSIG) and ignores SIGINT: a
Ctrl-C is the scheduler's to handle, and the scheduler ends the worker on every path.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import resource
import signal
import socket
import sys
import time
from typing import Any

import numpy as np

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Worker:
    def __init__(self, fds: dict[str, Any]) -> None:
        from perfprobe.kernels import ipc_kernels as kernels

        self.k = kernels
        self.fds = fds
        self.control = socket.socket(fileno=fds["control"])
        self.lines = self.control.makefile("rb")
        uds = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        uds.settimeout(30)
        uds.connect(fds["uds_path"])  # the named socket, as a scheduler's worker finds it
        uds.settimeout(None)
        self.uds = uds
        self.mapping = mmap.mmap(fds["memfd"], fds["map_bytes"])
        ctl_bytes = fds["ctl_bytes"]
        self.ctl = np.frombuffer(self.mapping, dtype=np.int64, count=kernels.CTL_WORDS)
        self.data = np.frombuffer(self.mapping, dtype=np.uint8, count=fds["map_bytes"] - ctl_bytes, offset=ctl_bytes)
        self.scratch = kernels.scratch_buffer()

    def reply(self, message: dict[str, Any]) -> None:
        self.control.sendall((json.dumps(message) + "\n").encode())

    def fd_args(self, transport: str) -> tuple[int, int, bool, bool]:
        """(read fd, write fd, socket?, one message per recv?) of a transport's worker end."""
        f = self.fds
        if transport == "uds":
            return self.uds.fileno(), self.uds.fileno(), True, False
        if transport == "pipe":
            return f["pipe_r"], f["pipe_w"], False, False
        fd = f[transport]
        return fd, fd, True, transport in ("uds_seqpacket",)

    def run(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """One echo or sink, as the command says."""
        k, transport, size, count = self.k, cmd["transport"], int(cmd["size"]), int(cmd["count"])
        buf = np.zeros(size, dtype=np.uint8)
        self.reply({"ready": True})
        start = _cpu_s()
        if "mode" in cmd:
            deadline = time.monotonic_ns() + int(cmd["timeout_s"] * 1e9)
            kernel = k.ring_echo if cmd["op"] == "echo" else k.ring_sink
            err = kernel(self.ctl, self.data, int(cmd["slots"]), int(cmd["stride"]), buf, count, int(cmd["mode"]),
                         self.fds["efd_mine"], self.fds["efd_peer"], self.scratch, deadline)
        else:
            rfd, wfd, sock, packet = self.fd_args(transport)
            kernel = k.fd_echo if cmd["op"] == "echo" else k.fd_sink
            err = kernel(rfd, wfd, buf, count, sock, packet)
        return {"err": int(err), "cpu_s": _cpu_s() - start}

    def serve(self) -> None:
        self.reply({"hello": os.getpid()})
        for line in self.lines:
            cmd = json.loads(line)
            if cmd["op"] == "quit":
                return
            if cmd["op"] == "pin":
                try:
                    os.sched_setaffinity(0, {int(cmd["cpu"])})
                    self.reply({"ok": True})
                except OSError as exc:
                    self.reply({"error": f"sched_setaffinity(CPU {cmd['cpu']}): {exc}"})
                continue
            self.reply(self.run(cmd))


def main(argv: list[str]) -> int:
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    Worker(json.loads(argv[1])).serve()
    return 0


if __name__ == "__main__":
    from perfprobe.system.fast_exit import leave

    leave(main(sys.argv))  # the scheduler reaps the worker: no 0.2 s of interpreter teardown
