"""Planted faults that perfprobe must find every time: the harness plants each one, runs perfprobe,
checks the report, and undoes the fault (perfprobe itself never changes a setting).

Faults (issue 12): the process limited to one CPU (taskset); RLIMIT_MEMLOCK lowered to 1 MiB
(prlimit); a CPU hog on the measured CPUs; THP set to `never` (only where the harness may write
/sys/kernel/mm/transparent_hugepage/enabled, restored afterwards); with --gpu: a second process
keeping the GPU busy while `pinned` and `streams` run, and CUDA_VISIBLE_DEVICES="" with
--require-gpu. Each is planted --runs times (default 5); the result table is printed and written as
this host's section of docs/results/planted-faults.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verdict_stability import host_label, write_section  # noqa: E402

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
Reports = dict[str, tuple[int, dict[str, Any] | None, str]]


def perfprobe(args: list[str], prefix: list[str] | None = None, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any] | None, str]:
    """Run perfprobe with --json; (exit code, report or None, stderr)."""
    cmd = [*(prefix or []), sys.executable, "-m", "perfprobe", *args, "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        report = None
    return proc.returncode, report, proc.stderr


def findings(report: dict[str, Any] | None, probe: str, verdict: str | None = None) -> list[dict[str, Any]]:
    if not report:
        return []
    return [f for r in report["results"] if r["probe"] == probe for f in r["findings"]
            if verdict is None or f["verdict"] == verdict]


def result(report: dict[str, Any] | None, probe: str) -> dict[str, Any] | None:
    return next((r for r in (report or {}).get("results", []) if r["probe"] == probe), None)


def any_message(found: list[dict[str, Any]], pattern: str) -> bool:
    return any(re.search(pattern, f["message"], re.I) for f in found)


@dataclass
class Fault:
    name: str
    commands: dict[str, list[str]]
    check: Callable[[Reports], tuple[bool, str]]
    plant: Callable[[], contextlib.AbstractContextManager[dict[str, Any]]]
    gpu: bool = False
    available: Callable[[], str | None] = lambda: None   # None, or why it cannot be planted here


@contextlib.contextmanager
def nothing() -> Iterator[dict[str, Any]]:
    yield {}


@contextlib.contextmanager
def one_cpu() -> Iterator[dict[str, Any]]:
    cpu = min(os.sched_getaffinity(0))
    yield {"prefix": ["taskset", "-c", str(cpu)]}


@contextlib.contextmanager
def memlock_1m() -> Iterator[dict[str, Any]]:
    yield {"prefix": ["prlimit", "--memlock=1048576:1048576"]}


@contextlib.contextmanager
def cpu_hog() -> Iterator[dict[str, Any]]:
    """One spinning process per usable CPU, each pinned to its CPU, killed afterwards."""
    hogs = []
    for cpu in sorted(os.sched_getaffinity(0)):
        hogs.append(subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", "while True: pass"],
                                     start_new_session=True))
    time.sleep(0.5)
    try:
        yield {}
    finally:
        for hog in hogs:
            os.killpg(hog.pid, signal.SIGKILL)
            hog.wait()


@contextlib.contextmanager
def thp_never() -> Iterator[dict[str, Any]]:
    before = re.search(r"\[(\w+)\]", THP.read_text()).group(1)  # type: ignore[union-attr]
    THP.write_text("never")
    try:
        yield {}
    finally:
        THP.write_text(before)


@contextlib.contextmanager
def gpu_hog() -> Iterator[dict[str, Any]]:
    """A second process that keeps the GPU's SMs and memory busy with a spinning kernel loop."""
    code = ("import cupy as cp, time\nx = cp.ones(1 << 28, dtype=cp.float32)\nt = time.time() + 600\n"
            "while time.time() < t:\n    for _ in range(20): x = x * 1.0000001 + 0.0\n"
            "    cp.cuda.Device().synchronize()\n")
    hog = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    time.sleep(3.0)
    try:
        yield {}
    finally:
        os.killpg(hog.pid, signal.SIGKILL)
        hog.wait()


@contextlib.contextmanager
def no_visible_gpu() -> Iterator[dict[str, Any]]:
    yield {"env": {"CUDA_VISIBLE_DEVICES": ""}}


def check_one_cpu(reports: Reports) -> tuple[bool, str]:
    _, host, _ = reports["host"]
    _, fs, _ = reports["falseshare"]
    warned = any_message(findings(host, "host", "warn"), r"may use 1 of")
    skipped = (result(fs, "falseshare") or {}).get("verdict") == "skip"
    return warned and skipped, f"host warns 1 usable CPU: {warned}; falseshare skips: {skipped}"


def check_memlock(reports: Reports) -> tuple[bool, str]:
    _, host, _ = reports["host"]
    said = any_message(findings(host, "host"), r"locked-memory limit")
    return said, f"host names the locked-memory limit: {said}"


LOAD_PATTERN = r"other (work|processes)|busy|under load|shared"


def check_cpu_hog(reports: Reports) -> tuple[bool, str]:
    named, false_warns = [], []
    for probe in ("cache", "falseshare"):
        _, report, _ = reports[probe]
        warns = findings(report, probe, "warn")
        named.append(any_message(findings(report, probe), LOAD_PATTERN))
        false_warns += [f"{probe}: {f['message'][:80]}" for f in warns
                        if not re.search(LOAD_PATTERN + r"|L3 ends at", f["message"], re.I)]
    ok = all(named) and not false_warns
    return ok, f"load named by cache/falseshare: {named}; other warns: {false_warns or 'none'}"


def check_thp(reports: Reports) -> tuple[bool, str]:
    _, host, _ = reports["host"]
    _, cache, _ = reports["cache"]
    warned = any_message(findings(host, "host", "warn"), r"huge pages are off")
    no_gain = any_message(findings(cache, "cache"), r"huge pages (not compared|change random DRAM latency little)")
    return warned and no_gain, f"host warns THP never: {warned}; cache reports no huge-page gain: {no_gain}"


GPU_SHARED = r"GPU was shared|other process"


def check_gpu_busy(reports: Reports) -> tuple[bool, str]:
    """Both probes say the GPU was shared, and neither issues a timing warn the hog produced."""
    named = {p: any_message(findings(reports[p][1], p), GPU_SHARED) for p in ("pinned", "streams")}
    loud = [f"{p}: {f['message'][:70]}" for p in ("pinned", "streams")
            for f in findings(reports[p][1], p, "warn") if not re.search(GPU_SHARED, f["message"], re.I)]
    return all(named.values()) and not loud, f"GPU named as shared: {named}; other warns: {loud or 'none'}"


def check_no_gpu(reports: Reports) -> tuple[bool, str]:
    code, report, err = reports["pinned"]
    res = result(report, "pinned") or {}
    lines = [line for line in err.splitlines() if line.strip()]
    ok = code == 3 and res.get("verdict") == "error" and len(lines) <= 1
    return ok, f"exit {code}, pinned {res.get('verdict')}: {res.get('summary', '')[:60]}; stderr lines {len(lines)}"


def thp_writable() -> str | None:
    return None if THP.exists() and os.access(THP, os.W_OK) else f"{THP} is not writable here"


FAULTS = [
    Fault("one CPU (taskset -c)", {"host": ["host"], "falseshare": ["falseshare", "--quick"]}, check_one_cpu, one_cpu),
    Fault("RLIMIT_MEMLOCK 1 MiB (prlimit)", {"host": ["host"]}, check_memlock, memlock_1m),
    Fault("CPU hog on every usable CPU", {"cache": ["cache", "--quick"], "falseshare": ["falseshare", "--quick"]},
          check_cpu_hog, cpu_hog),
    Fault("THP never", {"host": ["host"], "cache": ["cache", "--max-size", "256M", "--repeats", "2"]},
          check_thp, thp_never, available=thp_writable),
    Fault("GPU kept busy by a second process", {"pinned": ["pinned", "--quick"], "streams": ["streams", "--quick"]},
          check_gpu_busy, gpu_hog, gpu=True),
    Fault('CUDA_VISIBLE_DEVICES="" with --require-gpu', {"pinned": ["pinned", "--quick", "--require-gpu"]},
          check_no_gpu, no_visible_gpu, gpu=True),
]


def run_fault(fault: Fault, runs: int) -> tuple[int, list[str]]:
    found, notes = 0, []
    for _ in range(runs):
        with fault.plant() as how:
            reports = {key: perfprobe(args, how.get("prefix"), how.get("env")) for key, args in fault.commands.items()}
        ok, why = fault.check(reports)
        found += ok
        notes.append(("found: " if ok else "MISSED: ") + why)
    return found, notes


def kept_rows(path: Path, label: str, new_rows: list[str]) -> list[str]:
    """This host's earlier rows for faults not in `new_rows` (so --only runs add up, not replace)."""
    if not path.exists():
        return []
    match = re.search(rf"<!-- host: {re.escape(label)} -->(.*?)<!-- end host -->", path.read_text(), re.S)
    if not match:
        return []
    names = {row.split(" | ")[0] for row in new_rows}
    return [line for line in match.group(1).splitlines() if line.startswith("| ") and not line.startswith(
        ("| fault |", "| --- |")) and line.split(" | ")[0] not in names]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--gpu", action="store_true", help="also plant the GPU faults")
    parser.add_argument("--only", help="run only faults whose name contains this")
    parser.add_argument("--out", type=Path, default=Path("docs/results/planted-faults.md"))
    args = parser.parse_args()
    _, host_report, _ = perfprobe(["host"])
    label = host_label(host_report) if host_report else "unknown host"
    rows = ["| fault | found | last run |", "| --- | --- | --- |"]
    for fault in FAULTS:
        if (fault.gpu and not args.gpu) or (args.only and args.only not in fault.name):
            continue
        why_not = fault.available()
        if why_not:
            rows.append(f"| {fault.name} | not planted | {why_not} |")
            continue
        found, notes = run_fault(fault, args.runs)
        rows.append(f"| {fault.name} | {found} of {args.runs} | {notes[-1]} |")
        for note in notes:
            print(f"{fault.name}: {note}", file=sys.stderr)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = rows[:2] + kept_rows(args.out, label, rows[2:]) + rows[2:]
    only = f" --only {args.only}" if args.only else ""
    section = (f"<!-- host: {label} -->\n## {label}\n\n`python tools/planted_faults.py --runs {args.runs}"
               f"{' --gpu' if args.gpu else ''}{only}` on {when} (rows of faults not run this time kept from "
               "earlier runs)\n\n" + "\n".join(rows) + "\n<!-- end host -->\n")
    print(section)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if not args.out.exists():
        args.out.write_text("# Planted faults\n\nEach fault is planted by tools/planted_faults.py (never by "
                            "perfprobe), perfprobe runs, and the harness undoes the fault.\n\n")
    write_section(args.out, label, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
