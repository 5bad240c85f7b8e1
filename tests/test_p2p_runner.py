"""A `per_device=False` GPU probe (p2p) runs once over every selected GPU; --device takes a list."""

from __future__ import annotations

from typing import Any

import pytest

import fake_probes
from perfprobe.engine import runner
from perfprobe.engine.config import RunConfig
from perfprobe.engine.model import Assessment
from perfprobe.engine.probe import Probe, ProbeContext
from perfprobe.errors import UsageError
from perfprobe.kernels import cuda_runtime
from perfprobe.pure.units import parse_device

SEEN: list[tuple[int | None, tuple[int, ...]]] = []


def _measure(ctx: ProbeContext) -> dict[str, Any]:
    SEEN.append((ctx.device, ctx.devices))
    return {"devices": list(ctx.devices)}


def _judge(raw: Any, host: Any) -> Assessment:
    return Assessment(summary=f"{len(raw['devices'])} GPUs")


class _Always:
    def unmet(self, ctx: ProbeContext) -> None:
        return None


GROUP = Probe("group", "together", _judge, f"{__name__}:_measure", requires=(_Always(),),
              per_device=False)
EACH = Probe("each", "per device", _judge, f"{__name__}:_measure", requires=(_Always(),))


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    SEEN.clear()
    probes = {"group": GROUP, "each": EACH}
    monkeypatch.setattr(runner, "load_probe", lambda name: probes[name])
    monkeypatch.setattr(runner, "_read_host", lambda config: fake_probes.HOST)
    monkeypatch.setattr(cuda_runtime, "device_count", lambda: 4)
    # both count as GPU probes for the runner (needs_gpu looks for a Gpu() requirement)
    monkeypatch.setattr(Probe, "needs_gpu", property(lambda self: True))


def test_group_probe_runs_once_over_every_gpu_by_default():
    report = runner.run(["group"], RunConfig())
    assert SEEN == [(None, (0, 1, 2, 3))]
    assert [r.device for r in report.results] == [None] and report.results[0].summary == "4 GPUs"


def test_group_probe_takes_the_listed_gpus_and_per_device_probes_run_on_each():
    runner.run(["group", "each"], RunConfig(device=(2, 0)))
    assert SEEN == [(None, (2, 0)), (2, (2, 0)), (0, (2, 0))]


def test_default_device_stays_gpu_0_for_per_device_probes():
    runner.run(["each"], RunConfig())
    assert SEEN == [(0, (0,))]


def test_single_index_is_a_group_of_one():
    runner.run(["group"], RunConfig(device=1))
    assert SEEN == [(None, (1,))]


def test_listed_gpu_past_the_count_is_exit_2():
    with pytest.raises(UsageError, match="--device 0,5: no GPU 5; valid: 0 to 3"):
        runner.run(["group"], RunConfig(device=(0, 5)))


def test_group_probe_records_under_its_own_name(tmp_path):
    recording = tmp_path / "rec.json"
    runner.run(["group"], RunConfig(record=recording))
    import json

    assert json.loads(recording.read_text())["raw"] == {"group": {"devices": [0, 1, 2, 3]}}
    (result,) = runner.run(["group"], RunConfig(replay=recording)).results
    assert result.summary == "4 GPUs"


@pytest.mark.parametrize("text,expected", [("0,1", (0, 1)), (" 3, 1 ,2", (3, 1, 2)), ("all", "all"), ("2", 2)])
def test_parse_device_lists(text, expected):
    assert parse_device(text) == expected


@pytest.mark.parametrize("text", ["0,", ",1", "0,0", "0,x", "0;1", "1,254", "-1,2", "0,,1"])
def test_parse_device_bad_lists_are_usage_errors(text):
    with pytest.raises(UsageError, match="--device"):
        parse_device(text)
