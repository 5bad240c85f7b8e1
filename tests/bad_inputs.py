"""The bad files of issue 27, each command that reads them, and one in-process run of every pair.

`python tests/bad_inputs.py FOLDER` makes the files under FOLDER, runs every (kind, command) pair
through cli.main in this one process, and prints one JSON line per pair as it ends (`start` lines
before each, so a hang names its pair): the exit code, stderr, the seconds it took, and any file
it wrote. tests/test_bad_inputs.py runs it in a subprocess with a timeout and judges the lines.

Each kind damages a good document of the kind the command reads: a report (compare's NEW, fleet,
report), a baseline (compare's BASE, healthcheck --baseline in both modes), a recording (--replay)
or a policy (healthcheck --policy); a kind that means nothing for a document (a negative bandwidth
in a policy) is left out of that command.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import fleet_reports as fr  # noqa: E402 - tests/ on the path first

RECORDING = "cache_kvm2c_quick.json"
Doc = dict[str, Any]
Made = Any  # str or bytes (file content), or a Path (a special file) or None (kind left out)


def good_report() -> Doc:
    return fr.replayed(RECORDING, ("cache",))


def good_baseline() -> Doc:
    from perfprobe.fleet import baseline, peers
    from perfprobe.fleet.reports import Loaded

    hosts = [fr.as_host(good_report(), f"n{i}", seed=i) for i in range(3)]
    return baseline.build(peers.judge([Loaded(f"n{i}.json", h) for i, h in enumerate(hosts)]))


def good_recording() -> Doc:
    recording: Doc = json.loads((fr.DATA / RECORDING).read_text())
    return recording


def good_policy() -> Doc:
    return {"drain_on_warn": False, "regression": 0.2, "ignore": ["memlock"]}


def _figure(doc: Doc, kind: str, unit: str = "ns") -> tuple[dict[str, Any], str] | None:
    """(the object, its key) holding a figure in `unit` of a document, or None where it has none."""
    if kind == "report":
        for result in doc["results"]:
            for metric in result["metrics"].values():
                if metric["unit"] == unit and isinstance(metric["value"], (int, float)):
                    return metric, "value"
    if kind == "baseline":
        for metric in doc["groups"][0]["metrics"].values():
            if metric["unit"] == unit:
                return metric, "median"
    if kind == "recording" and unit == "ns":
        return doc["host"]["cpus"], "usable"
    if kind == "policy" and unit == "ns":
        return doc, "regression"
    return None


def _set_figure(value: Any, unit: str = "ns") -> Callable[[Doc, str], Made]:
    def damage(doc: Doc, kind: str) -> Made:
        found = _figure(doc, kind, unit)
        if found is None:
            return None
        holder, key = found
        holder[key] = [value] if kind == "recording" else value
        return json.dumps(doc)
    return damage


def _token(word: str) -> Callable[[Doc, str], Made]:
    """A figure written as a bare JSON word json.dumps never writes (NaN, Infinity, 1e999)."""
    marker = 987654.321

    def damage(doc: Doc, kind: str) -> Made:
        text = _set_figure(marker)(doc, kind)
        return None if text is None else text.replace(str(marker), word, 1)
    return damage


def _stats(doc: Doc, kind: str) -> Made:
    if kind == "report":
        metric = next(m for r in doc["results"] for m in r["metrics"].values() if m.get("stats"))
        metric["stats"]["samples"] = ["a", "b"]
    elif kind == "baseline":
        next(iter(doc["groups"][0]["metrics"].values()))["samples"] = ["a", "b"]
    elif kind == "recording":
        doc["host"]["cpus"] = "all of them"
    else:
        doc["facts"] = "usable CPUs"
    return json.dumps(doc)


def _wrong_types(doc: Doc, kind: str) -> Made:
    key = {"report": "results", "baseline": "groups", "recording": "raw", "policy": "ignore"}[kind]
    doc[key] = {"a": 1} if kind != "recording" else [1, 2]
    return json.dumps(doc)


def _old_version(doc: Doc, kind: str) -> Made:
    key = {"report": "schema_version", "baseline": "perfprobe_baseline"}.get(kind)
    if key is None:
        return None
    doc[key] = 1
    return json.dumps(doc)


def _unusable_baseline(doc: Doc, kind: str) -> Made:
    """A well-formed baseline holding no figure of the probes asked (a `host`-only fleet's)."""
    if kind == "recording":
        return None
    if kind == "policy":
        return json.dumps({"drain_on_error": True, "drain_everything": True})  # a key no policy has
    base = good_baseline()
    base["groups"][0]["metrics"] = {}
    return json.dumps(base)


def _huge(folder: Path) -> Path:
    """A file (sparse: no disk) one byte over the limit on an input."""
    from perfprobe.system import untrusted

    path = folder / "huge.json"
    with open(path, "wb") as out:
        out.truncate(untrusted.max_bytes() + 1)
    return path


def _fifo(folder: Path) -> Path:
    path = folder / "fifo.json"
    if not path.exists():
        os.mkfifo(path)
    return path


KINDS: dict[str, Callable[[Doc, str], Made]] = {
    "empty": lambda doc, kind: "",
    "blank": lambda doc, kind: " \n\t\n",
    "not JSON": lambda doc, kind: "perfprobe was here, not JSON",
    "truncated": lambda doc, kind: json.dumps(doc)[: len(json.dumps(doc)) // 2],
    "not UTF-8": lambda doc, kind: b"\xff\xfe" + json.dumps(doc).encode(),
    "a JSON array": lambda doc, kind: "[1, 2, 3]",
    "a JSON number": lambda doc, kind: "42",
    "a foreign object": lambda doc, kind: json.dumps({"hello": "world"}),
    "an old version": _old_version,
    "a string for a value": _set_figure("fast"),
    "NaN": _token("NaN"),
    "Infinity": _token("-Infinity"),
    "a float overflow": _token("1e999"),
    "a negative latency": _set_figure(-3.5),
    "a negative bandwidth": _set_figure(-12.0, "GB/s"),
    "wrong types": _wrong_types,
    "damaged repeats": _stats,
    "nested 100,000 deep": lambda doc, kind: "[" * 100_000 + "]" * 100_000,
    "huge": lambda doc, kind: _huge,
    "a FIFO": lambda doc, kind: _fifo,
    "/dev/zero": lambda doc, kind: Path("/dev/zero"),
    "an unusable baseline": _unusable_baseline,
}

# command -> (the document its bad file damages, argv with BAD, GOOD_REPORT, GOOD_BASELINE, OUT)
COMMANDS: dict[str, tuple[str, list[str]]] = {
    "compare": ("report", ["compare", "GOOD_REPORT", "BAD", "--json"]),
    "fleet": ("report", ["fleet", "BAD", "--baseline-out", "OUT/baseline.json", "--json"]),
    "report": ("report", ["report", "BAD", "--html", "OUT/page.html"]),
    "healthcheck --baseline": ("baseline", ["healthcheck", "--baseline", "BAD", "--node", "n1", "--dry-run",
                                            "-o", "OUT/run.json", "--prom", "OUT/run.prom", "--junit", "OUT/run.xml"]),
    "healthcheck --mode prolog": ("baseline", ["healthcheck", "--baseline", "BAD", "--mode", "prolog",
                                               "-o", "OUT/run.json", "--prom", "OUT/run.prom"]),
    # beyond the issue's five: compare's BASE, a probe's --replay, the health check's --policy
    "compare BASE": ("baseline", ["compare", "BAD", "GOOD_REPORT"]),
    "cache --replay": ("recording", ["cache", "--replay", "BAD", "-o", "OUT/run.json", "--html", "OUT/run.html"]),
    "healthcheck --policy": ("policy", ["healthcheck", "--baseline", "GOOD_BASELINE", "--policy", "BAD",
                                        "--node", "n1", "--dry-run", "-o", "OUT/run.json"]),
}
ISSUE_COMMANDS = ("compare", "fleet", "report", "healthcheck --baseline", "healthcheck --mode prolog")

GOOD = {"report": good_report, "baseline": good_baseline, "recording": good_recording, "policy": good_policy}


def bad_file(kind: str, doc_kind: str, folder: Path, good: Doc) -> Path | None:
    """The file of one kind of damage to a document of `doc_kind`, or None where it means nothing."""
    made = KINDS[kind](copy.deepcopy(good), doc_kind)
    if callable(made):
        return Path(made(folder))
    if made is None or isinstance(made, Path):
        return made
    path = folder / f"{doc_kind}-{list(KINDS).index(kind):02d}.json"
    path.write_bytes(made if isinstance(made, bytes) else made.encode())
    return path


class Measured(Exception):
    """Raised where perfprobe would start measuring: a bad input must stop it before."""


def _no_measuring(*args: Any, **kwargs: Any) -> Any:
    raise Measured("measurement started")


def run_one(argv: list[str]) -> tuple[int, str, str]:
    from cli_invoke import run_captured  # tests/ is on the path (above)

    return run_captured(argv)


def cases(folder: Path) -> list[tuple[str, str, list[str]]]:
    """(kind, command, argv) for every pair that means something."""
    inputs, out = folder / "inputs", folder / "out"
    inputs.mkdir(parents=True, exist_ok=True)
    out.mkdir(exist_ok=True)
    goods = {name: make() for name, make in GOOD.items()}
    (inputs / "good-report.json").write_text(json.dumps(goods["report"]))
    (inputs / "good-baseline.json").write_text(json.dumps(goods["baseline"]))
    words = {"GOOD_REPORT": str(inputs / "good-report.json"), "GOOD_BASELINE": str(inputs / "good-baseline.json")}
    found = []
    for kind in KINDS:
        for command, (doc_kind, argv) in COMMANDS.items():
            path = bad_file(kind, doc_kind, inputs, goods[doc_kind])
            if path is not None:
                filled = [str(path) if w == "BAD" else words.get(w, w.replace("OUT", str(out))) for w in argv]
                found.append((kind, command, filled))
    return found


def main(folder: Path) -> None:
    from perfprobe.engine import runner

    runner._measure = _no_measuring  # type: ignore[assignment]  # a probe's kernels (a replay calls none)
    try:
        from perfprobe.fleet import health_run

        health_run.measure = _no_measuring  # type: ignore[assignment]  # or in a child it starts
    except ImportError:
        pass
    os.environ.update(NO_COLOR="1", SLURMD_NODENAME="n1")
    out = folder / "out"
    for kind, command, argv in cases(folder):
        print(json.dumps({"start": [kind, command]}), flush=True)
        started = time.perf_counter()
        code, stdout, stderr = run_one(argv)
        seconds = time.perf_counter() - started
        written = sorted(p.name for p in out.iterdir())
        for path in out.iterdir():
            path.unlink()
        print(json.dumps({"kind": kind, "command": command, "code": code, "stderr": stderr, "stdout": stdout,
                          "seconds": round(seconds, 4), "written": written}), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
