"""The scheduler end of `perfprobe ipc`: the worker process, the transports, and cleanup on every path.

Everything is made before the worker starts and inherited by it: socket pairs (seqpacket, TCP on
127.0.0.1, one per event loop), two pipes, two eventfds and a memfd holding both rings, so nothing
lives in /dev/shm at all; the stream Unix socket is a named one in a private `mkdtemp` directory
(as a worker finds its scheduler), unlinked once the worker connects. `close()` runs on every path
(KeyboardInterrupt included): ask the worker to quit, kill it if it does not, reap it, close every
descriptor and remove the directory. A watchdog thread turns a dead or stuck worker into an error:
it kills a worker that outlives its command's timeout, then raises the ring's abort word and wakes
this side's eventfd, and a closed peer ends every socket and pipe wait with EOF.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from perfprobe.probes.ipc.plan import RING_BYTES

DIR_PREFIX = "perfprobe-ipc-"
START_TIMEOUT_S = 120.0      # a cold numba cache compiles every kernel in the worker first
CTL_BYTES = 4096             # the control words' page, before both rings' data
SOCKET_TIMEOUT_S = 30.0      # SO_RCVTIMEO / SO_SNDTIMEO on every socket: no wait outlasts it


class WorkerFailed(RuntimeError):
    """The worker died, timed out or reported an error: the probe's result is `error`, with why."""


def _sock_timeouts(sock: socket.socket, seconds: float) -> None:
    packed = struct.pack("ll", int(seconds), 0)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, packed)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, packed)


class Session:
    """One worker and its transports. Use as a context manager; `close()` is idempotent."""

    def __init__(self) -> None:
        self.k: Any = None               # the kernels, imported while the worker starts
        self.last_rtt_us: float | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.closed = False
        self._mine: list[Any] = []       # what close() closes
        self.dir = Path(tempfile.mkdtemp(prefix=DIR_PREFIX))
        self.deadline = float("inf")     # monotonic time past which the watchdog kills the worker
        self._stop = threading.Event()

    def __enter__(self) -> "Session":
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- start -------------------------------------------------------------------------------
    def _pair(self, family: int, kind: int) -> tuple[socket.socket, socket.socket]:
        a, b = socket.socketpair(family, kind)
        self._mine += [a, b]
        return a, b

    def _tcp_pair(self) -> tuple[socket.socket, socket.socket]:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._mine.append(listener)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        client = socket.create_connection(listener.getsockname(), timeout=SOCKET_TIMEOUT_S)
        server, _ = listener.accept()
        self._mine += [client, server]
        for s in (client, server):
            s.settimeout(None)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return client, server

    def _start(self) -> None:
        self.control, control_far = self._pair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.seq, seq_far = self._pair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        for s in (self.seq, seq_far):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.seq_sndbuf = self.seq.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        self.tcp, tcp_far = self._tcp_pair()
        self.aio = {name: self._pair(socket.AF_UNIX, socket.SOCK_STREAM) for name in ("asyncio", "uvloop")}
        to_r, to_w = os.pipe()        # scheduler -> worker
        from_r, from_w = os.pipe()    # worker -> scheduler
        self.pipe_r, self.pipe_w = from_r, to_w
        self.efd_mine, self.efd_peer = os.eventfd(0), os.eventfd(0)   # this side's, the worker's
        efd_far = self.efd_peer
        self.memfd = os.memfd_create("perfprobe-ipc-rings")
        self.map_bytes = CTL_BYTES + 2 * RING_BYTES
        os.ftruncate(self.memfd, self.map_bytes)
        self.mapping = mmap.mmap(self.memfd, self.map_bytes)
        far_fds = {"control": control_far.fileno(), "uds_seqpacket": seq_far.fileno(), "tcp": tcp_far.fileno(),
                   "asyncio": self.aio["asyncio"][1].fileno(), "uvloop": self.aio["uvloop"][1].fileno(),
                   "pipe_r": to_r, "pipe_w": from_w, "efd_mine": efd_far, "efd_peer": self.efd_mine,
                   "memfd": self.memfd}
        self._fd_ints = [to_r, to_w, from_r, from_w, self.efd_mine, efd_far, self.memfd]
        for s in (self.seq, seq_far, self.tcp, tcp_far):
            _sock_timeouts(s, SOCKET_TIMEOUT_S)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._mine.append(listener)
        self.uds_path = self.dir / "uds.sock"
        listener.bind(str(self.uds_path))
        listener.listen(1)
        fds = dict(far_fds, uds_path=str(self.uds_path), map_bytes=self.map_bytes, ctl_bytes=CTL_BYTES)
        self.stderr = open(self.dir / "worker.stderr", "w+b")
        self._mine.append(self.stderr)
        self.proc = subprocess.Popen([sys.executable, "-m", "perfprobe.probes.ipc.worker", json.dumps(fds)],
                                     pass_fds=[v for v in far_fds.values()], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.stderr, close_fds=True)
        for far in (control_far, seq_far, tcp_far, self.aio["asyncio"][1], self.aio["uvloop"][1]):
            far.close()
        for fd in (to_r, from_w):
            os.close(fd)
            self._fd_ints.remove(fd)
        self._map_views()
        self.lines = self.control.makefile("rb")
        self.control.settimeout(START_TIMEOUT_S)
        listener.settimeout(START_TIMEOUT_S)
        self.deadline = time.monotonic() + START_TIMEOUT_S
        self._watchdog = threading.Thread(target=self._watch, name="perfprobe-ipc-watchdog", daemon=True)
        self._watchdog.start()
        self.expect("hello")
        self.uds, _ = listener.accept()
        self._mine.append(self.uds)
        self.uds.settimeout(None)
        _sock_timeouts(self.uds, SOCKET_TIMEOUT_S)
        os.unlink(self.uds_path)

    def _map_views(self) -> None:
        """Import the kernels (numba) while the worker starts, then view the mapping through them."""
        from perfprobe.kernels import ipc_kernels as kernels

        assert kernels.CTL_WORDS * 8 <= CTL_BYTES
        self.k = kernels
        self.ctl = np.frombuffer(self.mapping, dtype=np.int64, count=kernels.CTL_WORDS)
        self.data = np.frombuffer(self.mapping, dtype=np.uint8, count=2 * RING_BYTES, offset=CTL_BYTES)
        self.scratch = kernels.scratch_buffer()

    # --- the watchdog ------------------------------------------------------------------------
    def _watch(self) -> None:
        while not self._stop.wait(0.01):
            proc = self.proc
            if proc is None:
                continue
            if proc.poll() is None and time.monotonic() > self.deadline:
                proc.kill()
            if proc.poll() is not None:
                self.abort()
                return

    def abort(self) -> None:
        """Release every wait of this side: the ring's abort word, this side's eventfd."""
        try:
            self.ctl[0] = 1   # kernels.ABORT
            os.eventfd_write(self.efd_mine, 1)
        except (OSError, ValueError, TypeError, AttributeError):
            pass

    # --- talking to the worker ---------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> None:
        try:
            self.control.sendall((json.dumps(message) + "\n").encode())
        except OSError as exc:
            raise self.failed(f"the control socket failed ({exc})") from exc

    def expect(self, key: str, timeout_s: float = SOCKET_TIMEOUT_S) -> dict[str, Any]:
        """The worker's next reply, which must hold `key` (else WorkerFailed, with why)."""
        self.control.settimeout(timeout_s)
        try:
            line = self.lines.readline()
        except OSError as exc:
            raise self.failed(f"no reply within {timeout_s:.0f} s ({exc})") from exc
        if not line:
            raise self.failed("it closed the control socket")
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise WorkerFailed(f"the worker reported: {reply['error']}")
        if key not in reply:
            raise self.failed(f"unexpected reply {reply}")
        return reply

    def failed(self, what: str) -> WorkerFailed:
        """The error to raise, with the worker's exit status and the end of its stderr."""
        proc, status = self.proc, ""
        if proc is not None:
            try:
                code = proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                code = None
            if code is not None and code < 0:
                status = f"; it was killed by {signal.Signals(-code).name}"
            elif code is not None:
                status = f"; it exited with status {code}"
        tail = ""
        try:
            self.stderr.seek(0)
            tail = self.stderr.read().decode(errors="replace").strip().splitlines()[-1:][0]
        except (OSError, ValueError, IndexError):
            pass
        return WorkerFailed(f"the ipc worker failed: {what}{status}" + (f" (stderr: {tail})" if tail else ""))

    def command(self, message: dict[str, Any], timeout_s: float) -> None:
        """Send one command and wait for `ready`; the worker must finish within timeout_s."""
        self.deadline = time.monotonic() + timeout_s
        self.send(message)
        self.expect("ready")

    def finish(self, timeout_s: float) -> dict[str, Any]:
        reply = self.expect("err", timeout_s)
        self.deadline = float("inf")
        return reply

    def pin_worker(self, cpu: int) -> None:
        self.send({"op": "pin", "cpu": cpu})
        self.expect("ok")

    # --- cleanup ------------------------------------------------------------------------------
    def close(self) -> None:
        """End the worker and release everything; safe to call twice and from any path."""
        if self.closed:
            return
        self.closed = True
        self._stop.set()
        proc = self.proc
        if proc is not None:
            if proc.poll() is None:
                try:
                    self.control.sendall(b'{"op": "quit"}\n')
                    proc.wait(timeout=0.5)
                except (OSError, AttributeError, subprocess.TimeoutExpired):
                    proc.kill()
            try:
                proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._release()

    def _release(self) -> None:
        for attr in ("ctl", "data"):
            if hasattr(self, attr):
                delattr(self, attr)   # views into the mapping go first, or it cannot close
        if hasattr(self, "mapping"):
            try:
                self.mapping.close()
            except BufferError:
                pass
        if hasattr(self, "lines"):
            self.lines.close()
        for item in self._mine:
            try:
                item.close()
            except OSError:
                pass
        for fd in getattr(self, "_fd_ints", []):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
