"""`streams` measure end to end on the CI host with a stand-in for cupy: device memory is host
memory, copies are memmoves, the kernel computes its closed form with numpy, events read the host
clock. This checks the plumbing and the result checks (poisoned outputs, reference, bit-for-bit
comparison), not any figure: figures come from the GPU host's recordings."""

from __future__ import annotations

import fake_cuda
from fake_cuda import FakeRuntime, install, streams_kernels
from perfprobe.engine.model import Verdict
from perfprobe.engine.probe import ProbeContext
from perfprobe.probes import streams
from perfprobe.probes.streams import measure, plan


def context() -> ProbeContext:
    return fake_cuda.context(4 << 20)


def test_measure_runs_every_configuration_checks_it_and_frees_everything(monkeypatch) -> None:
    runtime = FakeRuntime()
    install(monkeypatch, runtime, streams_kernels())
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
    install(monkeypatch, runtime, streams_kernels(skip_chunk_at=18))
    raw = measure.measure(context())
    bad = [c for c in raw["configs"] if not c["verified"]]
    assert len(bad) == 1 and bad[0]["mismatches"] > 0
    assert streams.judge(raw, {"gpus": []}).verdict is Verdict.ERROR
    assert not runtime.live


def test_the_checks_count_every_bad_element_across_the_host_threads_shares() -> None:
    """Poisoned (NaN) or differing elements in every share are all counted, whichever thread reads them."""
    import numpy as np

    from perfprobe.kernels.host_shares import host_pool
    from perfprobe.kernels.streams_kernels import reference

    elements, iters = 64 * measure.SHARE_UNIT, 7
    x = np.random.default_rng(1).random(elements, dtype=np.float32)
    with host_pool(4, "test") as workers:
        host = {"x": x, "out": reference(x, iters), "serial": reference(x, iters), "workers": workers,
                "threads": 4}
        assert measure._check_reference(host, iters)()["verified"]
        assert measure._check_same(host, "out")()["verified"]
        wrong = [0, elements // 3, elements // 2 + 5, elements - 1]
        host["out"][wrong] = np.nan
        assert measure._check_reference(host, iters)()["mismatches"] == len(wrong)
        assert measure._check_same(host, "out")()["mismatches"] == len(wrong)
