"""p2p judgement on labelled synthetic matrices (tests/data/p2p_synthetic_*.json, made by
tests/data/p2p_make_synthetic.py: no multi-GPU host was lent) and pair sampling."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfprobe.engine.model import Verdict
from perfprobe.probes import p2p
from perfprobe.probes.p2p import figures as fig
from perfprobe.probes.p2p import plan, rules
from typed_shape import undeclared

DATA = Path(__file__).parent / "data"


def load(name: str) -> dict:
    data = json.loads((DATA / f"p2p_synthetic_{name}.json").read_text())
    assert "synthetic" in data["label"]  # never mistaken for a recording
    return {"label": data["label"], "host": data["host"], "raw": data["raw"]["p2p"]}


def judged(data: dict):
    return p2p.judge(data["raw"], data["host"])


def warns(assessment) -> list[str]:
    return [f.message for f in assessment.findings if f.verdict is Verdict.WARN]


def test_healthy_nvlink_pair_passes_with_its_figures():
    result = judged(load("nvlink_healthy_2gpu"))
    assert warns(result) == []
    (uniform,) = [f for f in result.findings if "uniform" in f.message]
    assert "376-379 GB/s" in uniform.message and "84%" in uniform.message
    assert result.metrics["p2p_gbs.0.1"].value == 376.0 and result.metrics["peer_access.1.0"].value == 1
    assert result.metrics["p2p_bidir_gbs.0.1"].value == 742.0 and result.metrics["p2p_staged_gbs.0.1"].value == 19.6
    assert result.metrics["p2p_latency_us.0.1"].value == 2.3
    assert fig.expected(load("nvlink_healthy_2gpu")["raw"], 0, 1)["gbs"] == 450.0


def test_link_down_warns_naming_the_links_and_the_shortfall():
    result = judged(load("nvlink_link_down_2gpu"))
    messages = warns(result)
    assert any("link(s) 3, 4, 5, 6, 7, 8, 9 down (11 of 18 up)" in m for m in messages)
    slow = [m for m in messages if "GPU 0→1 236 GB/s, 52% of the 450 GB/s" in m]
    assert slow and "11 of 18 links between them up" in slow[0]
    assert not any("uniform" in f.message for f in result.findings)


def test_pcie_peer_refused_where_nvml_offers_it_warns_and_across_sockets_passes():
    result = judged(load("pcie_no_peer_4gpu"))
    (refused,) = warns(result)
    assert "0→1, 1→0, 2→3, 3→2" in refused and "NVML's P2P read status is OK" in refused
    passes = [f.message for f in result.findings if f.verdict is Verdict.PASS]
    assert any("no peer access on 8 of 12 directions" in m and "IOH topology not supported" in m for m in passes)
    assert any("2 NUMA nodes" in m for m in passes)
    assert result.metrics["peer_access.0.2"].value == 0 and result.metrics["p2p_gbs.0.2"].value is None
    assert result.metrics["p2p_staged_gbs.0.2"].value == 9.4


def test_asymmetric_pair_warns_with_both_directions():
    messages = warns(judged(load("asymmetric_2gpu")))
    assert any("asymmetric pair: GPU 0→1 25.1 GB/s, 1→0 13.2 GB/s (1.90x)" in m for m in messages)
    assert any("GPU 1→0" in m and "of a PCIe Gen4 x16 link" in m for m in messages)
    assert not any("GPU 0→1 25" in m and "% of the" in m for m in messages)  # 0→1 is healthy (80%)


def test_peer_no_faster_than_staged_warns():
    data = load("nvlink_healthy_2gpu")
    entry = data["raw"]["results"]["0.1"]
    entry["peer"]["sweep"][-1]["gbs"]["median"] = 21.0  # peer on, and as slow as the staged 19.6
    messages = warns(judged(data))
    assert any("peer access is on but direct copies run 21.0 GB/s against 19.6 GB/s staged" in m for m in messages)


def test_enable_failure_warns():
    data = load("asymmetric_2gpu")
    entry = data["raw"]["results"]["1.0"]
    entry.update(peer_enabled=False, enable_error="CUDARuntimeError: cudaErrorTooManyPeers")
    del entry["peer"]
    assert any("cudaDeviceEnablePeerAccess failed" in m for m in warns(judged(data)))


def test_refused_where_nvlink_is_up_warns():
    data = load("nvlink_healthy_2gpu")
    for key in ("0.1", "1.0"):
        data["raw"]["results"][key].update(can_access_peer=False, peer_enabled=False)
        del data["raw"]["results"][key]["peer"]
    (message,) = warns(judged(data))
    assert "18 NVLink links up (NVSwitch)" in message


def test_every_rule_runs_on_every_matrix_and_tables_fit_the_gpus():
    for name in ("nvlink_healthy_2gpu", "nvlink_link_down_2gpu", "pcie_no_peer_4gpu", "asymmetric_2gpu"):
        data = load(name)
        result = judged(data)
        n = len(data["raw"]["selected"])
        heat = [t for t in result.tables if t.heat]
        assert heat and all(len(t.rows) == n and len(t.columns) == n + 1 for t in heat)
        fraction = next(t for t in result.tables if t.heat == "fraction")
        assert all(isinstance(c, str) or 0 < c <= 1.5 for row in fraction.rows for c in row[1:])
        assert len(rules.findings(data["raw"], data["host"])) == len(result.findings)


def test_fraction_cells_colour_by_fraction_of_the_rate():
    result = judged(load("nvlink_link_down_2gpu"))
    fraction = next(t for t in result.tables if t.heat == "fraction")
    assert fraction.rows[0][2] == pytest.approx(236 / 450, abs=0.01)  # under 62% of the rate: red
    from perfprobe.render.table import _cell_text

    assert "red" in str(_cell_text(fraction.rows[0][2], None, fraction=True).spans)
    assert "green" in str(_cell_text(0.9, None, fraction=True).spans)
    assert "yellow" in str(_cell_text(0.7, None, fraction=True).spans)


def test_quick_sample_is_said():
    data = copy.deepcopy(load("pcie_no_peer_4gpu"))
    data["raw"].update(sampled=True, pairs_total=28)
    assert any("6 of 28 pairs (--quick)" in f.message for f in judged(data).findings)


def test_sampling_on_eight_gpus_is_the_ring():
    chosen, sampled = plan.sample_pairs(list(range(8)), plan.PRESETS.quick.max_pairs)
    assert sampled and chosen == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (0, 7)]
    assert plan.sample_pairs([0, 1, 2, 3], 6) == (plan.all_pairs([0, 1, 2, 3]), False)
    assert plan.sample_pairs(list(range(8)), None)[0] == plan.all_pairs(list(range(8)))


@given(st.sets(st.integers(0, 15), min_size=2, max_size=12), st.integers(1, 30))
def test_sample_covers_every_gpu_and_is_within_the_pairs(gpus, limit):
    devices = sorted(gpus)
    chosen, sampled = plan.sample_pairs(devices, limit)
    assert set(chosen) <= set(plan.all_pairs(devices)) and len(set(chosen)) == len(chosen)
    assert {g for p in chosen for g in p} == set(devices)
    assert sampled == (len(plan.all_pairs(devices)) > limit)


def test_plan_top_fits_two_buffers_on_every_gpu():
    from perfprobe.system.budget import MemoryBudget

    top, why = plan.plan_top(1 << 30, plan.PRESETS.full, [MemoryBudget(8 << 30, "a"), MemoryBudget(1 << 30, "b")])
    assert (top, why) == (512 << 20, "b")
    assert plan.plan_top(1 << 30, plan.PRESETS.quick, [MemoryBudget(8 << 30, "a")]) == (256 << 20, None)


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("p2p_synthetic_*.json")))
def test_the_matrices_hold_only_what_p2p_raw_names(name: str) -> None:
    """figures.P2pRaw names every key the matrices hold, with its type (the shape rules and tables read)."""
    assert undeclared(json.loads((DATA / name).read_text())["raw"]["p2p"], fig.P2pRaw) == []
