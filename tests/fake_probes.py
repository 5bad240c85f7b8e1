"""Probes and host facts made up for testing the runner, CLI and renderers without any kernel."""

from __future__ import annotations

from typing import Any

from perfprobe.engine.model import Assessment, Curve, Finding, Metric, Table, Verdict
from perfprobe.engine.probe import Gpu, Probe
from perfprobe.errors import GpuUnavailable, ProbeSkipped

HOST: dict[str, Any] = {
    "source": "live", "root": None, "kernel": "6.1.0",
    "cpu": {"model": "Test CPU", "vendor": "x", "sockets": 1, "cores_per_socket": 2, "threads_per_core": 1},
    "cpus": {"online": [0, 1], "offline": [], "usable": [0, 1], "usable_source": "affinity",
             "cores": [[0], [1]], "packages": [[0, 1]]},
    "caches": [{"level": 1, "type": "Data", "size_bytes": 49152, "line_bytes": 64, "ways": 12,
                "shared_cpus": [0], "instances": 2}],
    "memory": {"total_bytes": 1 << 34, "available_bytes": 1 << 33},
    "numa": {"nodes": [{"id": 0, "cpus": [0, 1], "memory_total_bytes": 1 << 34, "memory_free_bytes": 1 << 33}],
             "distances": [[10]], "memory_only_nodes": [], "balancing": 0, "notes": []},
    "pci_devices": [], "thp": {"enabled": "madvise", "defrag": "madvise"},
    "hugepages": {"size_bytes": 2 << 20, "total": 0, "free": 0},
    "cpufreq": {"governor": None, "governors": {}, "driver": None},
    "memlock": {"soft_bytes": None, "hard_bytes": None}, "gpus": [], "gpu_note": "no NVML", "notes": [],
}


def _judge_good(raw, host):
    return Assessment(
        summary=f"measured {raw['latency_ns']} ns",
        metrics={"latency_ns.L1": Metric(raw["latency_ns"], "ns")},
        findings=(Finding(Verdict.PASS, "fine"),),
        tables=(Table("Levels", ("level", "ns"), (("L1", raw["latency_ns"]),)),),
        curves=(Curve("latency", "working set (bytes)", "ns", ((4096.0, 1.0), (1 << 20, 4.0), (1 << 28, 90.0)),
                      marks=((49152.0, "L1d"),)),),
        key_figure=f"L1 {raw['latency_ns']} ns",
    )


def _judge_warn(raw, host):
    return Assessment(summary="slow", findings=(Finding(Verdict.WARN, "too slow", "do better"),),
                      metrics={"x": Metric(float("nan"), "ns")})


def _measure_gpu(ctx):
    raise GpuUnavailable("cupy is not installed", "pip install cupy[cuda]")


def _measure_skip(ctx):
    raise ProbeSkipped("needs 2 CPUs", "run without taskset")


def _measure_boom(ctx):
    raise RuntimeError("kernel exploded")


def _measure_good(ctx):
    return {"latency_ns": 1.5}


def _measure_nothing(ctx):
    return {}


class FakeClock:
    """A clock a test moves by hand: the runner's `_now` in the --quick budget tests, so no test
    depends on how fast this machine is."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


CLOCK = FakeClock()
SLOW_S = 30.0


def _measure_slow(ctx):
    """Measures what `good` does, taking SLOW_S seconds of CLOCK."""
    CLOCK.now += SLOW_S
    return _measure_good(ctx)


class _FakeGpu(Gpu):
    """A GPU requirement that is always met: the fake measure raises GpuUnavailable itself."""

    def unmet(self, ctx):
        return None


PROBES = {
    "good": Probe("good", "Good", _judge_good, "fake_probes:_measure_good"),
    "warny": Probe("warny", "Warny", _judge_warn, "fake_probes:_measure_nothing"),
    "gpu": Probe("gpu", "GPU", _judge_good, "fake_probes:_measure_gpu", requires=(_FakeGpu(),)),
    "skippy": Probe("skippy", "Skippy", _judge_good, "fake_probes:_measure_skip"),
    "boom": Probe("boom", "Boom", _judge_good, "fake_probes:_measure_boom"),
    "slow": Probe("slow", "Slow", _judge_good, "fake_probes:_measure_slow"),
}
