"""`streams` measure end to end on the CI host with a stand-in for cupy: device memory is host
memory, copies are memmoves, the kernel computes its closed form with numpy, events read the host
clock. This checks the plumbing and the result checks (poisoned outputs, reference, bit-for-bit
comparison), not any figure: figures come from the GPU host's recordings."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numpy as np

from perfprobe.config import Knobs, RunConfig
from perfprobe.kernels import cuda_runtime
from perfprobe.kernels import streams_kernels as sk
from perfprobe.model import Verdict
from perfprobe.probe import ProbeContext
from perfprobe.probes import streams
from perfprobe.probes.streams import measure, plan
from perfprobe.progress import null_progress
from test_pinned_measure import FakeEvent, FakeRuntime, _Device


class DevArray(np.ndarray):
    """A numpy array that answers `.data.ptr` as a cupy array does."""

    @property
    def data(self):  # type: ignore[override]
        return SimpleNamespace(ptr=self.ctypes.data)


class FakeStream:
    null: "FakeStream"

    def __init__(self, non_blocking: bool = False) -> None:
        self.ptr = id(self)

    def synchronize(self) -> None:
        pass

    def wait_event(self, event) -> None:
        pass


FakeStream.null = FakeStream()


def fake_cupy(runtime: FakeRuntime, skip_chunk_at: int | None = None) -> SimpleNamespace:
    launches = {"n": 0}

    def affine_iter(grid, block, args, stream=None) -> None:
        x, y, n, iters, a, b = args
        launches["n"] += 1
        if launches["n"] == skip_chunk_at:
            return  # a lost kernel: its chunk keeps the NaN poison
        y[:] = sk.reference(np.asarray(x), int(iters))

    def gate(grid, block, args, stream=None) -> None:
        pass

    module = SimpleNamespace(get_function=lambda name: {"affine_iter": affine_iter, "gate": gate}[name])

    def ndarray(shape, dtype, memptr):
        count = shape[0]
        nbytes = count * np.dtype(dtype).itemsize
        raw = (ctypes.c_char * nbytes).from_address(memptr.ptr)
        return np.frombuffer(raw, dtype=dtype).view(DevArray)

    pool = SimpleNamespace(free_all_blocks=lambda: None)
    cuda = SimpleNamespace(runtime=runtime, Stream=FakeStream, Event=FakeEvent, Device=lambda index=0: _Device(),
                           get_elapsed_time=lambda a, b: (b.at - a.at) * 1e3,
                           UnownedMemory=lambda ptr, nbytes, owner: SimpleNamespace(ptr=ptr),
                           MemoryPointer=lambda memory, offset: SimpleNamespace(ptr=memory.ptr + offset))
    return SimpleNamespace(cuda=cuda, RawModule=lambda code: module, ndarray=ndarray,
                           get_default_memory_pool=lambda: pool, get_default_pinned_memory_pool=lambda: pool)


def context() -> ProbeContext:
    host = {"memory": {"available_bytes": 8 << 30}, "gpus": []}
    return ProbeContext(RunConfig(quick=True, options=Knobs(size=4 << 20)), host, null_progress, 0)


def test_measure_runs_every_configuration_checks_it_and_frees_everything(monkeypatch) -> None:
    runtime = FakeRuntime()
    monkeypatch.setattr(cuda_runtime, "load_cupy", lambda: fake_cupy(runtime))
    raw = measure.measure(context())
    pairs = [(c["chunks"], c["streams"]) for c in raw["configs"]]
    assert pairs == plan.configurations(plan.PRESETS.quick)
    assert raw["serial"]["verified"] and all(c["verified"] for c in raw["configs"])
    assert all(v["verified"] for v in raw["breakers"].values())
    assert not runtime.live
    result = streams.judge(raw, {"gpus": []})
    assert result.verdict is not Verdict.ERROR and result.tables


def test_a_lost_chunk_is_caught_as_wrong_results(monkeypatch) -> None:
    runtime = FakeRuntime()
    # launches: 2 x 4 timing the kernel while calibrating, 4 more at the chosen count, 1 + 3 serial,
    # then the first configuration's checked pass: lose one of its kernels
    monkeypatch.setattr(cuda_runtime, "load_cupy", lambda: fake_cupy(runtime, skip_chunk_at=18))
    raw = measure.measure(context())
    bad = [c for c in raw["configs"] if not c["verified"]]
    assert len(bad) == 1 and bad[0]["mismatches"] > 0
    assert streams.judge(raw, {"gpus": []}).verdict is Verdict.ERROR
    assert not runtime.live
