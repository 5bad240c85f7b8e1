"""Hypothesis strategies for the files perfprobe reads: reports and baselines shaped by the shipped
schemas (perfprobe/schema/report.schema.json, baseline.schema.json), built by hand (the project
does not depend on hypothesis-jsonschema), then damaged in the ways issue 27 lists.

`documents()` draws (kind, document): a report or a baseline that follows its schema, with finite
figures of the sign their unit allows. `damaged()` draws what to write instead: the document
itself, or a damage that makes it unusable (wrong types, strings for values, NaN, a negative
figure, deep nesting, truncation), or a special file (huge, a FIFO, /dev/zero).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from perfprobe.system.untrusted import MAX_DEPTH, NON_NEGATIVE_UNITS

Doc = dict[str, Any]
UNITS = ("ns", "µs", "GB/s", "bytes", "count", "ratio", "cycles", "x")
SIGNED = tuple(u for u in UNITS if u not in NON_NEGATIVE_UNITS)
VERDICTS = st.sampled_from(["pass", "warn", "skip", "error"])
WORDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
IDS = st.lists(st.integers(0, 511), max_size=4)
NAMES = st.sampled_from(["cache", "falseshare", "numa", "layout", "pinned", "uvm"])
METRIC_NAMES = st.sampled_from(["latency_ns.L1", "latency_ns.DRAM", "read_gbs.L2.1t", "line_bytes", "x.y", "é"])


def figure(unit: str) -> st.SearchStrategy[float | int]:
    low = -1e6 if unit in SIGNED else 0
    return st.floats(low, 1e6, allow_nan=False, allow_infinity=False) | st.integers(max(low, -10**6), 10**6)


@st.composite
def metric(draw: st.DrawFn) -> Doc:
    unit = draw(st.sampled_from(UNITS))
    out: Doc = {"value": draw(st.none() | figure(unit)), "unit": unit}
    if draw(st.booleans()):
        spread = st.none() | st.floats(0, 1e3, allow_nan=False)
        out["stats"] = {"n": draw(st.integers(1, 100)), "median": draw(figure(unit)), "min": draw(figure(unit)),
                        "max": draw(figure(unit)), "mad": draw(spread), "iqr": draw(spread),
                        "samples": draw(st.lists(figure(unit), max_size=6))}
    if draw(st.integers(0, 5)) == 0:
        out["unstable"] = draw(WORDS)
    return out


def result() -> st.SearchStrategy[Doc]:
    finding = st.fixed_dictionaries({"verdict": VERDICTS, "message": WORDS, "advice": WORDS})
    return st.fixed_dictionaries(
        {"probe": NAMES, "device": st.none() | st.integers(0, 7), "verdict": VERDICTS, "summary": WORDS,
         "metrics": st.dictionaries(METRIC_NAMES, metric(), min_size=1, max_size=4), "findings": st.lists(finding, max_size=2),
         "duration_s": st.floats(0, 100, allow_nan=False)},
        optional={"key_figure": WORDS, "facts": st.dictionaries(WORDS, WORDS, max_size=2)})


def host() -> st.SearchStrategy[Doc]:
    cache = st.fixed_dictionaries({"level": st.integers(1, 3), "type": st.sampled_from(["Data", "Unified"]),
                                   "size_bytes": st.none() | st.integers(0, 1 << 30),
                                   "line_bytes": st.none() | st.sampled_from([64, 128]), "shared_cpus": IDS})
    return st.fixed_dictionaries(
        {"cpu": st.fixed_dictionaries({"model": st.none() | WORDS}),
         "cpus": st.fixed_dictionaries({"online": IDS, "usable": IDS}), "caches": st.lists(cache, max_size=2),
         "numa": st.just({"nodes": [], "distances": []}), "gpus": st.just([])},
        optional={"hostname": st.none() | WORDS, "slurm_node": st.none() | WORDS,
                  "memory": st.fixed_dictionaries({"total_bytes": st.none() | st.integers(0, 1 << 40)})})


def report() -> st.SearchStrategy[Doc]:
    return st.fixed_dictionaries({"schema_version": st.just(2), "perfprobe_version": st.just("0.1.0"), "host": host(),
                                  "results": st.lists(result(), min_size=1, max_size=3), "verdict": VERDICTS})


@st.composite
def baseline_metric(draw: st.DrawFn) -> Doc:
    unit = draw(st.sampled_from(UNITS))
    values = draw(st.lists(figure(unit), min_size=1, max_size=5))
    return {"median": draw(figure(unit)), "mad": draw(st.floats(0, 1e3, allow_nan=False)), "n": len(values),
            "unit": unit, "values": values, "samples": draw(st.lists(figure(unit), max_size=6))}


def baseline() -> st.SearchStrategy[Doc]:
    keys = st.builds(lambda p, m: f"{p}:{m}", NAMES, METRIC_NAMES)
    group = st.fixed_dictionaries({
        "label": WORDS, "signature": st.fixed_dictionaries({"cpu_model": st.none() | WORDS, "cpus": st.integers(0, 64)}),
        "hosts": st.lists(WORDS, max_size=3), "metrics": st.dictionaries(keys, baseline_metric(), min_size=1, max_size=4),
        "facts": st.dictionaries(WORDS, WORDS, max_size=3), "verdicts": st.dictionaries(NAMES, VERDICTS, max_size=2)})
    return st.fixed_dictionaries({"perfprobe_baseline": st.just(2), "perfprobe_version": st.just("0.1.0"),
                                  "groups": st.lists(group, min_size=1, max_size=2)})


def documents() -> st.SearchStrategy[tuple[str, Doc]]:
    return st.tuples(st.just("report"), report()) | st.tuples(st.just("baseline"), baseline())


def _figures(doc: Doc, kind: str) -> list[tuple[dict[str, Any], str, str]]:
    """(holder, key, unit) of every figure a damage may hit."""
    if kind == "report":
        return [(m, "value", m["unit"]) for r in doc["results"] for m in r["metrics"].values()]
    return [(m, "median", m["unit"]) for g in doc["groups"] for m in g["metrics"].values()]


@st.composite
def damaged(draw: st.DrawFn, kind: str, doc: Doc) -> tuple[str, Any]:
    """(the damage's name, what to write: text, bytes, or 'huge' / 'fifo' / 'dev_zero'); ('none', text)
    writes the document as drawn."""
    figures = _figures(doc, kind)
    choices = ["string value", "NaN", "Infinity", "negative", "deep value"] if figures else []
    choices += ["truncate", "top type", "drop a key", "deep", "wrong container", "huge", "fifo", "dev_zero", "none"]
    name = choices[draw(st.integers(0, 1 << 16)) % len(choices)]  # evenly: sampled_from favours the first
    text = json.dumps(doc)
    if name == "none":
        return name, text
    if name == "truncate":
        return name, text[: draw(st.integers(0, len(text) - 1))]
    if name == "top type":
        return name, json.dumps(draw(st.sampled_from([[doc], "report", 2, None])))
    if name == "drop a key":
        required = ("schema_version", "host", "results") if kind == "report" else ("perfprobe_baseline", "groups")
        doc.pop(draw(st.sampled_from(required)))
        return name, json.dumps(doc)
    if name == "deep":
        depth = draw(st.sampled_from([MAX_DEPTH + 1, 1000, 100_000]))
        return name, "[" * depth + text + "]" * depth
    if name == "wrong container":
        doc["results" if kind == "report" else "groups"] = draw(st.sampled_from([{}, "x", 3]))
        return name, json.dumps(doc)
    if name in ("huge", "fifo", "dev_zero"):
        return name, name
    holder, key, unit = draw(st.sampled_from(figures))
    if name == "negative" and unit in SIGNED:
        name, holder["unit"] = "negative", "ns"  # a unit that cannot be negative
    marker = 987654.25
    holder[key] = {"string value": "fast", "negative": -draw(st.floats(0.001, 1e6)),
                   "deep value": json.loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))}.get(name, marker)
    written = json.dumps(doc)
    word = {"NaN": "NaN", "Infinity": draw(st.sampled_from(["Infinity", "-Infinity", "1e999"]))}.get(name)
    return name, written.replace(str(marker), word, 1) if word else written
