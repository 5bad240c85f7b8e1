"""GPU-to-GPU copies through cupy's runtime bindings: peer access, cudaMemcpyPeerAsync one way and
both ways at once, small-copy latency.

Every copy is one cudaMemcpyPeerAsync on a non-blocking stream of the source GPU, bracketed by CUDA
events recorded on that stream (device time). Both ways at once: a start event on GPU i's stream,
GPU j's stream waits for it, each stream copies towards the other GPU, GPU j's end event is waited
on by GPU i's stream, and the span is read between GPU i's two events (elapsed time needs both
events on one device). Peer access off, the driver stages each copy through host memory; on, the
copy engines write across NVLink or PCIe directly. Device buffers are cudaMalloc'd (not cupy's pool)
and freed by `Buffers.close` in `finally`. Returns plain numbers only; judgement is in
perfprobe/probes/p2p/rules.py.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from perfprobe.pure.stats import Stat, summarize

ALREADY_ENABLED = 704  # cudaErrorPeerAccessAlreadyEnabled
NOT_ENABLED = 705      # cudaErrorPeerAccessNotEnabled


def can_access_peer(cupy: ModuleType, device: int, peer: int) -> bool:
    """cudaDeviceCanAccessPeer(device, peer): may `device` map `peer`'s memory."""
    return bool(cupy.cuda.runtime.deviceCanAccessPeer(device, peer))


def set_peer_access(cupy: ModuleType, device: int, peer: int, enable: bool) -> dict[str, Any]:
    """cudaDeviceEnablePeerAccess / Disable from `device` to `peer`: {"ok", "was", "error"}.
    `was` is the state found (True: already enabled, False: not enabled, None: not known)."""
    runtime = cupy.cuda.runtime
    with cupy.cuda.Device(device):
        try:
            (runtime.deviceEnablePeerAccess if enable else runtime.deviceDisablePeerAccess)(peer)
            return {"ok": True, "was": not enable, "error": None}
        except Exception as exc:  # CUDARuntimeError: its .status says which
            status = getattr(exc, "status", None)
            if status == (ALREADY_ENABLED if enable else NOT_ENABLED):
                return {"ok": True, "was": enable, "error": None}
            return {"ok": False, "was": None, "error": _words(exc)}


class Buffers:
    """`count` device buffers of `nbytes` on each GPU, every byte written once; `close` frees them."""

    def __init__(self, cupy: ModuleType) -> None:
        self._cupy = cupy
        self._owned: list[tuple[int, int]] = []  # (device, pointer)

    def take(self, device: int, nbytes: int, fill: int) -> int:
        runtime = self._cupy.cuda.runtime
        with self._cupy.cuda.Device(device):
            ptr = int(runtime.malloc(nbytes))
            self._owned.append((device, ptr))
            runtime.memset(ptr, fill, nbytes)
            runtime.deviceSynchronize()
        return ptr

    def close(self) -> None:
        runtime = self._cupy.cuda.runtime
        while self._owned:
            device, ptr = self._owned.pop()
            with self._cupy.cuda.Device(device):
                try:
                    runtime.deviceSynchronize()  # nothing in flight may touch freed memory
                except Exception:  # a sticky error: free anyway, the original error is on its way up
                    pass
                runtime.free(ptr)


def _stream_and_events(cupy: ModuleType, device: int, events: int) -> tuple[Any, list[Any]]:
    with cupy.cuda.Device(device):
        return cupy.cuda.Stream(non_blocking=True), [cupy.cuda.Event() for _ in range(events)]


def _timed_copies(cupy: ModuleType, dst: int, dst_device: int, src: int, src_device: int, nbytes: int,
                  warmup: int, repeats: int) -> list[float]:
    """Device milliseconds of `repeats` copies of `nbytes` from `src_device` to `dst_device`."""
    stream, (start, end) = _stream_and_events(cupy, src_device, 2)
    runtime = cupy.cuda.runtime

    def once() -> float:
        with cupy.cuda.Device(src_device):
            start.record(stream)
            runtime.memcpyPeerAsync(dst, dst_device, src, src_device, nbytes, stream.ptr)
            end.record(stream)
            end.synchronize()
            return float(cupy.cuda.get_elapsed_time(start, end))

    for _ in range(warmup):
        once()
    return [once() for _ in range(repeats)]


def peer_copy(cupy: ModuleType, dst: int, dst_device: int, src: int, src_device: int, nbytes: int,
              warmup: int, repeats: int) -> dict[str, Any]:
    """GB/s (median and spread) and device ms of `nbytes` from `src_device` to `dst_device`."""
    device_ms = _timed_copies(cupy, dst, dst_device, src, src_device, nbytes, warmup, repeats)
    return {"bytes": nbytes, "gbs": summarize([nbytes / (ms * 1e-3) / 1e9 for ms in device_ms]),
            "device_ms": summarize(device_ms)}


def peer_latency(cupy: ModuleType, dst: int, dst_device: int, src: int, src_device: int, nbytes: int,
                 repeats: int) -> Stat:
    """Microseconds of one small copy between events: median and spread over `repeats` (5 warm-ups)."""
    device_ms = _timed_copies(cupy, dst, dst_device, src, src_device, nbytes, 5, repeats)
    return summarize([ms * 1e3 for ms in device_ms])


def peer_bidirectional(cupy: ModuleType, bufs: dict[int, tuple[int, int]], a: int, b: int, nbytes: int,
                       warmup: int, repeats: int) -> dict[str, Any]:
    """a→b and b→a at once (two streams, one per GPU): both copies' bytes over the span, GB/s.
    `bufs[d]` is (source, destination) on GPU d."""
    runtime = cupy.cuda.runtime
    s_a, (start, end) = _stream_and_events(cupy, a, 2)
    s_b, (b_done,) = _stream_and_events(cupy, b, 1)

    def once() -> float:
        with cupy.cuda.Device(a):
            start.record(s_a)
        with cupy.cuda.Device(b):
            s_b.wait_event(start)
        with cupy.cuda.Device(a):
            runtime.memcpyPeerAsync(bufs[b][1], b, bufs[a][0], a, nbytes, s_a.ptr)
        with cupy.cuda.Device(b):
            runtime.memcpyPeerAsync(bufs[a][1], a, bufs[b][0], b, nbytes, s_b.ptr)
            b_done.record(s_b)
        with cupy.cuda.Device(a):
            s_a.wait_event(b_done)
            end.record(s_a)
            end.synchronize()
            return float(cupy.cuda.get_elapsed_time(start, end))

    for _ in range(warmup):
        once()
    device_ms = [once() for _ in range(repeats)]
    return {"bytes": nbytes, "gbs": summarize([2 * nbytes / (ms * 1e-3) / 1e9 for ms in device_ms]),
            "device_ms": summarize(device_ms)}


def _words(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
