"""uvm measure() on the CI host: the skip path, size choice, and the whole flow against a fake cupy.

The fake cupy keeps "device", "managed" and "pinned" memory in host numpy buffers and runs the two
kernels in numpy, so the orchestration (plan, attribute gates, API fallback, sums, freeing every
allocation) is exercised without a GPU. It checks nothing about speed: timings are the host's.
"""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import numpy as np
import pytest

from fake_cuda import FakeRuntime, fake_cupy
from perfprobe.engine.config import Knobs, RunConfig
from perfprobe.engine.probe import ProbeContext
from perfprobe.engine.progress import null_progress
from perfprobe.errors import GpuUnavailable, ProbeSkipped
from perfprobe.kernels.uvm_kernels import pattern
from perfprobe.probes import uvm
from perfprobe.probes.uvm import figures, measure, plan
from perfprobe.system.budget import MemoryBudget
from typed_shape import undeclared

MiB = 1 << 20


def _view(ptr: int, size: int, dtype: Any) -> np.ndarray:
    from perfprobe.kernels.uvm_memory import host_view
    return host_view(ptr, size).view(dtype)


class FakeKernel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, grid: tuple, block: tuple, args: tuple) -> None:
        ptr, count = int(args[0]), int(args[1])
        if self.name == "read_sum":
            args[2].value[0] += np.uint64(_view(ptr, count * 16, np.uint32).sum(dtype=np.uint64))
        else:
            period = np.tile(pattern(), count // pattern().size)
            np.add(period, np.uint32(args[2]), out=_view(ptr, count * 4, np.uint32))


def uvm_cupy(attributes: dict[int, int] | None = None, host_location_fails: bool = True) -> Any:
    """The shared fake cupy (tests/fake_cuda.py) with the uvm kernels in numpy."""
    runtime = FakeRuntime(attributes=attributes, host_location_fails=host_location_fails, free_bytes=64 * MiB,
                          properties={"totalGlobalMem": 1 << 34, "multiProcessorCount": 2}, mapped_host_alloc=True)
    return fake_cupy(runtime, FakeKernel)


def _ctx(**options: Any) -> ProbeContext:
    config = RunConfig(quick=True, options=Knobs(**{"size": 2 * MiB, "repeats": 2, "passes": 3, **options}))
    return ProbeContext(config=config, host={"memory": {"available_bytes": 1 << 34}},
                        progress=null_progress, device=None)


@pytest.fixture
def no_bindings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `from cuda.bindings import runtime` fail, as on a host without cuda-bindings."""
    monkeypatch.setitem(sys.modules, "cuda", None)


def test_without_cupy_measure_says_gpu_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(GpuUnavailable, match="cupy"):
        measure.measure(_ctx())


def test_every_path_runs_checks_its_sum_and_frees_its_memory(monkeypatch: pytest.MonkeyPatch,
                                                             no_bindings: None) -> None:
    cupy = uvm_cupy(host_location_fails=False)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    raw = measure.measure(_ctx())
    assert cupy.cuda.runtime.live == {}
    measured = {name for name, entry in raw["paths"].items() if "time_s" in entry}
    assert measured == {"managed_on_demand", "managed_prefetch", "managed_advise_preferred_gpu",
                        "managed_advise_accessed_by", "explicit_copy", "device_memory", "zero_copy",
                        "explicit_copy_passes", "zero_copy_passes", "pageable_direct",
                        "host_on_demand", "host_prefetch", "host_explicit_copy", "host_local"}
    assert raw["paths"]["zero_copy_passes"]["bytes"] == 3 * 2 * MiB
    assert raw["paths"]["managed_prefetch"]["time_s"]["repeats"] == 2
    assert set(raw["paths"]["managed_prefetch"]) >= {"prefetch_s", "kernel_s"}
    assert raw["api_used"]["prefetch to host"] == "cupy.cuda.runtime"
    assert uvm.judge(raw, {}).summary.startswith("Fake GPU, 2 MiB")
    assert undeclared(raw, figures.UvmRaw) == []


def test_host_location_failure_without_bindings_skips_only_those_paths(
        monkeypatch: pytest.MonkeyPatch, no_bindings: None) -> None:
    cupy = uvm_cupy(host_location_fails=True)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    raw = measure.measure(_ctx())
    assert cupy.cuda.runtime.live == {}
    for name in ("host_prefetch", "managed_advise_accessed_by"):
        assert raw["paths"][name]["unavailable"] is True
        assert "cuda-bindings is not installed" in raw["paths"][name]["skipped"]
    assert "time_s" in raw["paths"]["managed_prefetch"]
    notes = [note for note in raw["api_notes"] if "cupy's prefetch to host failed" in note]
    assert len(notes) == 1  # tried once; later calls go straight to the fallback
    assert undeclared(raw, figures.UvmRaw) == []
    verdicts = [f.verdict.value for f in uvm.judge(raw, {}).findings]
    assert "warn" in verdicts


def test_attributes_gate_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    cupy = uvm_cupy({89: 0, 88: 0})  # no concurrentManagedAccess, no pageableMemoryAccess
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    raw = measure.measure(_ctx())
    assert "concurrentManagedAccess" in raw["paths"]["managed_prefetch"]["skipped"]
    assert "pageableMemoryAccess" in raw["paths"]["pageable_direct"]["skipped"]
    assert "time_s" in raw["paths"]["managed_on_demand"]
    assert not any("prefetch" in call for call in cupy.cuda.runtime.locations)


def _budgets(device_free: int, host_available: int) -> tuple[MemoryBudget, MemoryBudget]:
    return (MemoryBudget(device_free // 4, "a quarter of the device's free memory"),
            MemoryBudget(host_available // 4, "a quarter of the host's available memory"))


def test_choose_size_defaults_and_caps() -> None:
    assert plan.choose_size(None, plan.PRESETS.full, *_budgets(140 << 30, 100 << 30)) == (4 << 30, None)
    assert plan.choose_size(None, plan.PRESETS.quick, *_budgets(140 << 30, 100 << 30)) == (256 * MiB, None)
    size, note = plan.choose_size(None, plan.PRESETS.full, *_budgets(8 << 30, 100 << 30))
    assert size == 2 << 30 and note == "capped at a quarter of the device's free memory"
    size, note = plan.choose_size(3 * MiB + 5, plan.PRESETS.full, *_budgets(8 << 30, 8 * MiB))
    assert size == 2 * MiB and note == "capped at a quarter of the host's available memory"


def test_choose_size_skips_when_nothing_fits() -> None:
    with pytest.raises(ProbeSkipped, match="too little free memory"):
        plan.choose_size(None, plan.PRESETS.full, *_budgets(3 * MiB, 100 << 30))


def test_test_knobs_override_the_preset() -> None:
    counts = plan.counts(Knobs(repeats=5, passes=2), plan.PRESETS.full)
    assert (counts.repeats, counts.passes) == (5, 2)
    counts = plan.counts(Knobs(), plan.PRESETS.quick)
    assert (counts.repeats, counts.passes) == (plan.REPEATS, plan.DEFAULT_PASSES)


def fake_bindings(monkeypatch: pytest.MonkeyPatch, cuda12: bool = False,
                  fails: bool = False) -> list[tuple]:
    """Install a fake `cuda.bindings.runtime`; returns the list its calls are appended to."""
    import enum

    calls: list[tuple] = []

    class cudaError_t(enum.IntEnum):
        cudaSuccess = 0
        cudaErrorInvalidValue = 1

    class cudaMemLocationType(enum.IntEnum):
        cudaMemLocationTypeDevice = 1
        cudaMemLocationTypeHost = 2

    result = (cudaError_t.cudaErrorInvalidValue if fails else cudaError_t.cudaSuccess,)

    def prefetch(ptr: int, size: int, loc: Any, flags: int, stream: int) -> tuple:
        calls.append(("prefetch", loc.type.name, loc.id, stream))
        return result

    def advise(ptr: int, size: int, advice: Any, loc: Any) -> tuple:
        calls.append(("advise", int(advice), loc.type.name))
        return result

    runtime = types.ModuleType("cuda.bindings.runtime")
    runtime.cudaError_t = cudaError_t  # type: ignore[attr-defined]
    runtime.cudaMemLocationType = cudaMemLocationType  # type: ignore[attr-defined]
    runtime.cudaMemLocation = types.SimpleNamespace  # type: ignore[attr-defined]
    runtime.cudaMemoryAdvise = int  # type: ignore[attr-defined]
    runtime.cudaGetErrorString = lambda err: (0, b"invalid argument")  # type: ignore[attr-defined]
    suffix = "_v2" if cuda12 else ""
    setattr(runtime, "cudaMemPrefetchAsync" + suffix, prefetch)
    setattr(runtime, "cudaMemAdvise" + suffix, advise)
    bindings = types.ModuleType("cuda.bindings")
    bindings.runtime = runtime  # type: ignore[attr-defined]
    cuda = types.ModuleType("cuda")
    cuda.bindings = bindings  # type: ignore[attr-defined]
    for name, module in (("cuda", cuda), ("cuda.bindings", bindings), ("cuda.bindings.runtime", runtime)):
        monkeypatch.setitem(sys.modules, name, module)
    return calls


@pytest.mark.parametrize("cuda12", [False, True], ids=["cuda13-bindings", "cuda12-bindings-v2"])
def test_host_locations_fall_back_to_cuda_bindings_once(monkeypatch: pytest.MonkeyPatch,
                                                        cuda12: bool) -> None:
    calls = fake_bindings(monkeypatch, cuda12=cuda12)
    cupy = uvm_cupy(host_location_fails=True)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    raw = measure.measure(_ctx())
    assert "time_s" in raw["paths"]["host_prefetch"]
    assert "time_s" in raw["paths"]["managed_advise_accessed_by"]
    assert raw["api_used"]["prefetch to host"].startswith("cuda.bindings")
    assert raw["api_used"]["prefetch to device"] == "cupy.cuda.runtime"
    assert ("prefetch", "cudaMemLocationTypeHost", 0, 1234) in calls
    assert ("advise", 3, "cudaMemLocationTypeHost") in calls
    assert len([n for n in raw["api_notes"] if "prefetch to host" in n]) == 1
    assert cupy.cuda.runtime.live == {}


def test_a_failing_fallback_skips_the_path_with_cudas_message(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_bindings(monkeypatch, fails=True)
    monkeypatch.setitem(sys.modules, "cupy", uvm_cupy(host_location_fails=True))
    raw = measure.measure(_ctx())
    entry = raw["paths"]["host_prefetch"]
    assert entry["unavailable"] and "cudaErrorInvalidValue: invalid argument" in entry["skipped"]


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from perfprobe import cli

    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    return int(exit_info.value.code or 0), capsys.readouterr().out


def test_cli_without_a_gpu_skips_with_exit_0(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)
    code, out = _cli(["uvm", "--json"], capsys)
    result = json.loads(out)["results"][0]
    assert code == 0 and result["verdict"] == "skip" and "cupy" in result["summary"]


def test_cli_without_a_gpu_under_require_gpu_exits_3(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)
    code, out = _cli(["uvm", "--json", "--require-gpu"], capsys)
    assert code == 3 and json.loads(out)["results"][0]["verdict"] == "error"


@pytest.mark.parametrize("periods,threads", [(1, 4), (3, 2), (5, 3), (8, 16)])
def test_host_fill_on_a_pool_writes_what_one_thread_writes(periods: int, threads: int) -> None:
    """Shares are whole pattern periods, so the pool's fill is the one-thread fill, element for element."""
    from concurrent.futures import ThreadPoolExecutor

    from perfprobe.kernels.uvm_kernels import PATTERN_ELEMENTS, expected_sum, host_fill
    one, pooled = (np.zeros(periods * PATTERN_ELEMENTS, dtype=np.uint32) for _ in range(2))
    host_fill(one, 7)
    with ThreadPoolExecutor(threads) as workers:
        host_fill(pooled, 7, workers=workers, threads=threads)
    assert np.array_equal(one, pooled)
    assert int(pooled.sum(dtype=np.uint64)) == expected_sum(pooled.nbytes, 7)

