"""`make bench-verdicts`: run `perfprobe all --quick` N times and count how often each finding fires.

A verdict that changes between runs on an unchanged host is a false alarm waiting to happen. This
prints, per warn/error/skip finding (its message with the numbers blanked out), how many runs it
fired in, and the flip count: runs whose verdict set (every probe's verdict and every non-pass
finding) differs from the most common one. It writes that as a section of
docs/results/verdict-stability.md, one section per host (a re-run replaces its host's section).
Extra perfprobe arguments follow `--`, e.g. `-- --require-gpu`.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def finding_key(probe: str, device: Any, finding: dict[str, Any]) -> str:
    """A finding's identity across runs: probe, device, verdict and the message without numbers."""
    where = probe if device is None else f"{probe}[{device}]"
    return f"{where} {finding['verdict']}: {NUMBER.sub('#', finding['message'])}"


def verdict_set(report: dict[str, Any]) -> frozenset[str]:
    """What must not change between runs: each probe's verdict and each non-pass finding."""
    keys = set()
    for result in report["results"]:
        where = result["probe"] if result.get("device") is None else f"{result['probe']}[{result['device']}]"
        keys.add(f"{where} = {result['verdict']}")
        keys.update(finding_key(result["probe"], result.get("device"), f)
                    for f in result["findings"] if f["verdict"] != "pass")
    return frozenset(keys)


def run_once(extra: list[str]) -> tuple[dict[str, Any], int, float]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "perfprobe", "all", "--quick", "--json", *extra],
                          capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - started
    try:
        return json.loads(proc.stdout), proc.returncode, elapsed
    except ValueError:
        raise SystemExit(f"run exited {proc.returncode} without a JSON report: {proc.stderr.strip()[-400:]}") from None


def summarise(reports: list[dict[str, Any]], codes: list[int]) -> dict[str, Any]:
    sets = [verdict_set(r) for r in reports]
    majority, _ = collections.Counter(sets).most_common(1)[0]
    fired = collections.Counter(k for s in sets for k in s if " = " not in k)
    ceilings = [k for r in reports for k in ceiling_breaches(r)]
    return {"runs": len(reports), "flips": sum(s != majority for s in sets), "fired": fired,
            "exit_codes": collections.Counter(codes), "ceiling_breaches": ceilings,
            "notes": held_and_unconfirmed(reports)}


CEILED = re.compile(r"efficiency|fraction")  # ratio metrics with a ceiling of 1 (ideal, link, share)
CEILED_TEXT = re.compile(r"(\d+(?:\.\d+)?)% of (the ideal|one thread's speed|the \S+ link)")


def ceiling_breaches(report: dict[str, Any]) -> list[str]:
    """Figures with a physical ceiling above it: metrics in fractions or %, ratio metrics named
    *efficiency* / *fraction*, and messages saying "N% of the ideal" (or of one thread, of the link)."""
    out = []
    for result in report["results"]:
        for name, metric in (result.get("metrics") or {}).items():
            value, unit = metric.get("value"), metric.get("unit")
            if not isinstance(value, (int, float)):
                continue
            ceiled = unit in ("fraction", "%") or (unit == "ratio" and CEILED.search(name))
            if ceiled and value > (100.0 if unit == "%" else 1.0) + 1e-9:
                out.append(f"{result['probe']}: {name} = {value} {unit}")
        for finding in result.get("findings") or []:
            out += [f"{result['probe']}: \"{m.group(0)}\"" for m in CEILED_TEXT.finditer(finding["message"])
                    if float(m.group(1)) > 100.0]
    return out


def held_and_unconfirmed(reports: list[dict[str, Any]]) -> dict[str, int]:
    """How many pass notes were warns held back under load or not confirmed on a re-measurement."""
    counts = collections.Counter()
    for report in reports:
        for result in report["results"]:
            for finding in result.get("findings") or []:
                if finding["message"].startswith("not confirmed on a re-measurement"):
                    counts["not confirmed on a re-measurement"] += 1
                elif finding["message"].startswith("held back"):
                    counts["held back under load"] += 1
                elif (finding.get("confirmation") or {}).get("confirmed"):
                    counts["confirmed on a re-measurement"] += 1
    return dict(counts)


def machine_load() -> str:
    """The 1-minute load average and this host's CPU count: whether others were busy meanwhile."""
    try:
        one = os.getloadavg()[0]
    except OSError:
        return "unknown"
    return f"{one:.1f} on {os.cpu_count()} CPUs"


def host_label(report: dict[str, Any]) -> str:
    host = report["host"]
    cpu = (host.get("cpu") or {}).get("model") or platform.processor() or "unknown CPU"
    cpus = len((host.get("cpus") or {}).get("online") or []) or os.cpu_count()
    gpus = ", ".join(sorted({g.get("name") or "?" for g in host.get("gpus") or []})) or "no GPU"
    return f"{cpu}, {cpus} CPUs, {gpus}, kernel {host.get('kernel')}"


def markdown(label: str, args: argparse.Namespace, summary: dict[str, Any], seconds: list[float],
             load: tuple[str, str] = ("unknown", "unknown")) -> str:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    notes = summary.get("notes") or {}
    lines = [f"`perfprobe all --quick {' '.join(args.extra)}`".replace(" `", "`"),
             f"× {summary['runs']} on {when}; run time {min(seconds):.0f}–{max(seconds):.0f} s; "
             f"load average {load[0]} before, {load[1]} after.", "",
             f"- **flips: {summary['flips']}** (runs whose verdict set differs from the majority)",
             "- exit codes: " + ", ".join(f"{c}: {n}×" for c, n in sorted(summary["exit_codes"].items())),
             "- ratios above their ceiling: " + (", ".join(summary["ceiling_breaches"]) or "none"),
             "- warns turned notes: " + (", ".join(f"{k} {n}×" for k, n in sorted(notes.items())) or "none"), "",
             "| finding (numbers blanked) | fired in |", "| --- | --- |"]
    lines += [f"| {key} | {n} of {summary['runs']} |" for key, n in sorted(summary["fired"].items())]
    if not summary["fired"]:
        lines.append(f"| (no warn, error or skip finding) | 0 of {summary['runs']} |")
    return host_section(label, lines)


def host_section(label: str, lines: list[str]) -> str:
    """A host's section as write_section finds it again: its markers and heading around `lines`."""
    return "\n".join([f"<!-- host: {label} -->", f"## {label}", "", *lines]) + "\n<!-- end host -->\n"


def write_section(path: Path, label: str, section: str) -> None:
    """Replace this host's section in `path` (or append it), keeping the other hosts' sections."""
    text = path.read_text() if path.exists() else (
        "# Verdict stability\n\nWritten by `make bench-verdicts` (tools/verdict_stability.py): "
        "the same quick run repeated on an unchanged host. A flip is a false alarm waiting to happen.\n\n")
    pattern = re.compile(rf"<!-- host: {re.escape(label)} -->.*?<!-- end host -->\n", re.S)
    text = pattern.sub(lambda _m: section, text) if pattern.search(text) else text + "\n" + section
    path.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("docs/results/verdict-stability.md"))
    parser.add_argument("--save-reports", type=Path, help="folder for each run's JSON report")
    parser.add_argument("--max-seconds", type=float, help="start no run after this many seconds (the record "
                        "then says how many ran)")
    parser.add_argument("extra", nargs="*", help="more perfprobe arguments (after --)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    reports, codes, seconds = [], [], []
    load_before = machine_load()
    started = time.perf_counter()
    for index in range(args.runs):
        if args.max_seconds and index and time.perf_counter() - started > args.max_seconds:
            print(f"stopping after {index} runs: --max-seconds {args.max_seconds:g} passed", file=sys.stderr)
            break
        report, code, elapsed = run_once(args.extra)
        reports.append(report), codes.append(code), seconds.append(elapsed)
        print(f"run {index + 1}/{args.runs}: exit {code}, {elapsed:.1f} s", file=sys.stderr)
        if args.save_reports:
            args.save_reports.mkdir(parents=True, exist_ok=True)
            (args.save_reports / f"run{index + 1:02d}.json").write_text(json.dumps(report))
    summary = summarise(reports, codes)
    label = host_label(reports[0])
    section = markdown(label, args, summary, seconds, (load_before, machine_load()))
    print(section)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_section(args.out, label, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
