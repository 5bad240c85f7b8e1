"""Issue 12 item 3: no ratio with a physical ceiling (an efficiency against an ideal, a fraction of a
link, per-thread scaling) reads above it, in any recording under tests/data replayed through judge."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from perfprobe.engine.model import ProbeResult, Report
from perfprobe.engine.registry import PROBE_MODULES, load_probe
from perfprobe.render.json import report_to_dict

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import verdict_stability as vs  # noqa: E402

DATA = Path(__file__).parent / "data"


def _recordings() -> list[tuple[str, str]]:
    """(file, raw key) of every recording whose raw is keyed by probe, as --record writes it."""
    found = []
    for path in sorted(DATA.glob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or not isinstance(data.get("raw"), dict) or "host" not in data:
            continue
        found += [(path.name, key) for key in data["raw"] if key.split("[")[0] in PROBE_MODULES]
    return found


RECORDINGS = _recordings()


def test_there_are_recordings_to_check() -> None:
    assert len(RECORDINGS) >= 20


@pytest.mark.parametrize("name, key", RECORDINGS, ids=[f"{n}:{k}" for n, k in RECORDINGS])
def test_no_recorded_ratio_reads_above_its_ceiling(name: str, key: str) -> None:
    data = json.loads((DATA / name).read_text())
    probe = load_probe(key.split("[")[0])
    assessment = probe.judge(data["raw"][key], data["host"])  # a recording that no longer judges fails here
    result = ProbeResult(probe=probe.name, verdict=assessment.verdict, summary=assessment.summary,
                         metrics=dict(assessment.metrics), findings=tuple(assessment.findings))
    assert vs.ceiling_breaches(report_to_dict(Report("0", data["host"], (result,)))) == []
