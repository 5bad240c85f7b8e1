"""`pinned` measure end to end on the CI host with a stand-in for cupy: copies are real memmoves
between real buffers, events read the host clock. This checks the plumbing (buffers, sizes, raw
layout, freeing, judge on the result), not any figure: figures come from the GPU host's recordings."""

from __future__ import annotations

import ctypes
import time
from types import SimpleNamespace

import pytest

from perfprobe.config import Knobs, RunConfig
from perfprobe.errors import UsageError
from perfprobe.kernels import cuda_runtime
from perfprobe.model import Verdict
from perfprobe.probe import ProbeContext
from perfprobe.probes import pinned
from perfprobe.probes.pinned import measure, plan
from perfprobe.progress import null_progress


class FakeRuntime:
    """cudaMalloc/cudaHostAlloc as ctypes buffers, cudaMemcpyAsync as memmove; records frees."""

    def __init__(self) -> None:
        self.live: dict[int, ctypes.Array] = {}
        self.freed: list[int] = []
        self.registered: set[int] = set()

    def _alloc(self, nbytes: int) -> int:
        buffer = ctypes.create_string_buffer(nbytes)
        self.live[ctypes.addressof(buffer)] = buffer
        return ctypes.addressof(buffer)

    malloc = _alloc

    def hostAlloc(self, nbytes: int, flags: int) -> int:
        return self._alloc(nbytes)

    def free(self, ptr: int) -> None:
        self.freed.append(self.live.pop(ptr) and ptr)

    freeHost = free

    def hostRegister(self, ptr: int, nbytes: int, flags: int) -> None:
        self.registered.add(ptr)

    def hostUnregister(self, ptr: int) -> None:
        self.registered.remove(ptr)

    def memset(self, ptr: int, value: int, nbytes: int) -> None:
        ctypes.memset(ptr, value, nbytes)

    def memcpyAsync(self, dst: int, src: int, nbytes: int, kind: int, stream: int) -> None:
        ctypes.memmove(dst, src, nbytes)

    def deviceGetPCIBusId(self, device: int) -> str:
        return "0000:ff:1f.7"

    def memGetInfo(self) -> tuple[int, int]:
        return 8 << 30, 16 << 30

    def getDeviceProperties(self, device: int) -> dict:
        return {"name": b"Fake GPU", "totalGlobalMem": 16 << 30, "asyncEngineCount": 2,
                "concurrentKernels": 1, "multiProcessorCount": 4, "major": 9, "minor": 0}

    def runtimeGetVersion(self) -> int:
        return 13000

    def driverGetVersion(self) -> int:
        return 13000

    def deviceSynchronize(self) -> None:
        pass


class FakeEvent:
    def __init__(self) -> None:
        self.at = 0.0

    def record(self, stream=None) -> None:
        time.sleep(1e-5)  # a nonzero span between events
        self.at = time.perf_counter()

    def synchronize(self) -> None:
        pass


def fake_cupy(runtime: FakeRuntime) -> SimpleNamespace:
    stream = lambda non_blocking=False: SimpleNamespace(ptr=1, synchronize=lambda: None,  # noqa: E731
                                                        wait_event=lambda event: None)
    pool = SimpleNamespace(free_all_blocks=lambda: None)
    cuda = SimpleNamespace(runtime=runtime, Stream=stream, Event=FakeEvent, Device=lambda index=0: _Device(),
                           get_elapsed_time=lambda a, b: (b.at - a.at) * 1e3)
    return SimpleNamespace(cuda=cuda, get_default_memory_pool=lambda: pool,
                           get_default_pinned_memory_pool=lambda: pool)


class _Device:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def synchronize(self) -> None:
        pass


@pytest.fixture
def runtime(monkeypatch) -> FakeRuntime:
    runtime = FakeRuntime()
    monkeypatch.setattr(cuda_runtime, "load_cupy", lambda: fake_cupy(runtime))
    return runtime


def context(quick: bool, max_size: int) -> ProbeContext:
    host = {"memory": {"available_bytes": 8 << 30}, "gpus": []}
    return ProbeContext(RunConfig(quick=quick, options=Knobs(size=max_size)), host, null_progress, 0)


@pytest.mark.parametrize("quick", [False, True])
def test_measure_fills_every_size_frees_everything_and_judges(runtime: FakeRuntime, quick: bool) -> None:
    raw = measure.measure(context(quick, 1 << 20))
    assert raw["sizes_bytes"] == plan.sweep_sizes(1 << 20, plan.PRESETS.pick(quick))
    for mode, directions in (("pageable", ("h2d", "d2h")), ("pinned", ("h2d", "d2h", "bidir"))):
        for direction in directions:
            assert len(raw[mode][direction]) == len(raw["sizes_bytes"])
    assert not runtime.live and not runtime.registered  # every allocation freed, nothing left pinned
    assert raw["budget"] == {"requested_bytes": 1 << 20, "top_bytes": 1 << 20, "capped_by": None}
    assert raw["device"]["name"] == "Fake GPU"
    result = pinned.judge(raw, {"gpus": []})
    assert result.verdict in (Verdict.PASS, Verdict.WARN) and result.tables


def test_measure_frees_everything_when_a_copy_fails(runtime: FakeRuntime, monkeypatch) -> None:
    calls = {"n": 0}
    copy = runtime.memcpyAsync

    def failing(*args):
        calls["n"] += 1
        if calls["n"] == 30:
            raise RuntimeError("cudaErrorLaunchFailure: unspecified launch failure")
        return copy(*args)

    monkeypatch.setattr(runtime, "memcpyAsync", failing)
    with pytest.raises(RuntimeError, match="cudaErrorLaunchFailure"):
        measure.measure(context(False, 1 << 20))
    assert not runtime.live


def test_size_below_64k_is_a_usage_error_before_anything_runs() -> None:
    config = context(False, 1000).config
    with pytest.raises(UsageError, match="64K"):
        pinned.PROBE.check_knobs(config, {})  # type: ignore[misc]
    pinned.PROBE.check_knobs(context(False, 64 << 10).config, {})  # type: ignore[misc]
