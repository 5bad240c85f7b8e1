"""`make bench-speed` (issue 28): where a cold and a warm `perfprobe all --quick` spend their time.

Runs, on this host, each in a fresh process:

1. `perfprobe --help` (the import of the CLI alone);
2. `perfprobe all --quick` with an empty numba cache (NUMBA_CACHE_DIR a new directory): the cold run
   a new server, a fresh CI container and a first health check pay;
3. the same, `--warm` more times, with that cache kept (the warm runs);
4. `perfprobe healthcheck --mode prolog --baseline B` warm, B built by `perfprobe fleet
   --baseline-out` from the warm runs' reports (prolog: exit status only, nothing drained);
5. with `--fresh-clone`: `git clone` of this tree and `make run` in it (pip install and `all`).

Each perfprobe run is profiled from inside (this file's `--child` mode): the time to import the CLI;
the imports of numba and numpy (paid by the first probe that needs them, counted apart); compiling
ahead; per probe, from the runner's own stage clock (engine/stages.py, the one a `--quick` run past
its budget reports), numba's compilation (numba's own `numba:compile` events, which only real
compiles raise: a kernel loaded from numba's cache is counted in the stage that loaded it), the
first measurement (allocation, first touch and timed runs: not split further), the re-measurements
(confirmations of timing warns and of unstable figures; before that clock, tables counted these in
judging too, and an unstable figure's second measurement as measuring), and judging; then
rendering. It prints a table per run and, with `--md FILE`, replaces this host's section of FILE
(docs/benchmarks.md's "Speed" part).

    python tools/bench_speed.py [--warm 3] [--fresh-clone] [--md docs/benchmarks.md] [-- ARGS]

ARGS go to `all --quick` (e.g. --require-gpu) and to the health check's probes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Speed: cold and warm runs (issue 28)"


def child(profile_out: Path, argv: list[str]) -> int:
    """Run `perfprobe ARGV` in this process: the imports timed here, each probe's stages read from
    the runner's own stage clock (ProbeResult.stages_s, engine/stages.py: the one a --quick run past
    its budget reports) and the compiles from kernels/compile_clock.py."""
    begun = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    from perfprobe import cli
    from perfprobe.cli import commands  # noqa: F401 - cli loads its commands lazily: count them here

    timings: dict[str, Any] = {"import_cli_s": time.perf_counter() - begun, "probes": {}}
    heavy = time.perf_counter()
    import numba  # noqa: F401  - the first probe pays this; counted apart so its figure is its own
    import numpy  # noqa: F401

    timings["import_numba_s"] = time.perf_counter() - heavy
    from perfprobe.engine import runner
    from perfprobe.kernels import compile_clock

    compile_clock.seconds()  # numba is imported: its compiles are counted from here on
    reports: list[Any] = []
    render_start = [0.0]
    real_run = runner.run

    def run_and_mark(*args: Any, **kwargs: Any) -> Any:
        report = real_run(*args, **kwargs)
        reports.append(report)
        render_start[0] = time.perf_counter()
        return report

    runner.run = run_and_mark
    code = 0
    try:
        cli.main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    ended = time.perf_counter()
    timings["render_s"] = ended - render_start[0] if render_start[0] else 0.0
    timings["total_in_process_s"] = ended - begun
    probes: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for report in reports:
        budget = report.quick_budget  # a --quick run: its time outside the probes (the runner's clock)
        if budget is not None:
            timings["compile_ahead_s"] = timings.get("compile_ahead_s", 0.0) + budget.compile_ahead_s
            timings["outside_s"] = timings.get("outside_s", 0.0) + budget.outside_s - budget.compile_ahead_s
        for result in report.results:  # a GPU probe on several GPUs: summed
            for stage, seconds in result.stages_s.items():
                probes[result.probe][stage + "_s"] += seconds
    timings["probes"] = {name: dict(stages) for name, stages in probes.items()}
    timings["compiles"] = compile_clock.by_kernel()
    profile_out.write_text(json.dumps(timings, indent=1))
    return code


def profiled(argv: list[str], env: dict[str, str], workdir: Path, tag: str) -> dict[str, Any]:
    """One perfprobe run in a fresh process: wall time, exit code and the child's profile."""
    profile = workdir / f"{tag}.profile.json"
    start = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", str(profile), "--", *argv],
                          env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    result: dict[str, Any] = {"tag": tag, "argv": argv, "rc": done.returncode, "wall_s": wall}
    if profile.exists():
        result["profile"] = json.loads(profile.read_text())
    else:
        result["stderr"] = done.stderr[-2000:]
    if argv[:1] == ["healthcheck"] and done.returncode != 0:
        result["said"] = _health_message(done.stdout)  # why it would drain: a drain here is a false one
    return result


def _health_message(stdout: str) -> str:
    """The health check's --json verdict message, or its last line of output."""
    try:
        return str(json.loads(stdout)["message"])
    except (ValueError, KeyError, TypeError):
        return (stdout.strip().splitlines() or ["no output"])[-1][:300]


def table(run: dict[str, Any]) -> list[str]:
    """Markdown rows: one per probe (compile, measure, re-measure, judge), then imports and render."""
    profile = run.get("profile") or {}
    lines = [f"**{run['tag']}** (`perfprobe {' '.join(run['argv'])}`): {run['wall_s']:.1f} s wall, exit {run['rc']}", "",
             "| stage | compile s | measure s | re-measure s | judge s |",
             "| --- | ---: | ---: | ---: | ---: |",
             f"| import the CLI | | {profile.get('import_cli_s', 0):.2f} | | |",
             f"| import numba, numpy | | {profile.get('import_numba_s', 0):.2f} | | |",
             f"| compile ahead, in parallel | {profile.get('compile_ahead_s', 0):.2f} | | | |",
             f"| the rest outside the probes (host facts, numba's cache checked) | | {profile.get('outside_s', 0):.2f} | | |"]
    if not profile.get("probes") and run["argv"][:1] == ["healthcheck"]:
        lines[0] += " (its probes run in a child process: only the wall time is profiled here)"
    if run.get("said"):
        lines[0] += f"; it said: {run['said']}"
    for name, stages in (profile.get("probes") or {}).items():
        if not any(stages.values()):
            continue  # a probe that skipped at once (no GPU)
        lines.append(f"| {name} | {stages.get('compile_s', 0):.2f} | {stages.get('measure_s', 0):.2f} | "
                     f"{stages.get('remeasure_s', 0):.2f} | {stages.get('judge_s', 0):.2f} |")
    lines.append(f"| render and write | | {profile.get('render_s', 0):.2f} | | |")
    compiles: dict[str, float] = dict(profile.get("compiles") or {})
    slowest = sorted(compiles.items(), key=lambda kv: -kv[1])[:8]
    if slowest and sum(compiles.values()) > 0.5:
        lines += ["", "slowest compiles: " + ", ".join(f"{k} {v:.2f} s" for k, v in slowest)]
    return lines + [""]


def fresh_clone_make_run(workdir: Path) -> dict[str, Any]:
    """`git clone` this tree and time `make run` in the clone (pip install into .venv, then `all`)."""
    clone = workdir / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    shared = ROOT.parent / "shared"
    if shared.exists() and not (clone.parent / "shared").exists():
        (clone.parent / "shared").symlink_to(shared)
    start = time.perf_counter()
    done = subprocess.run(["make", "run"], cwd=clone, capture_output=True, text=True)
    return {"tag": "make run on a fresh clone", "rc": done.returncode, "wall_s": time.perf_counter() - start}


def host_label() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {len(os.sched_getaffinity(0))} usable CPUs"


def write_section(md: Path, label: str, body: list[str]) -> None:
    """Replace this host's subsection under SECTION (or add both)."""
    text = md.read_text() if md.exists() else ""
    head = f"### {label}"
    if SECTION not in text:
        text = text.rstrip() + f"\n\n{SECTION}\n\nWritten by `make bench-speed` (tools/bench_speed.py).\n"
    before, _, rest = text.partition(SECTION)
    parts = rest.split("\n### ")
    kept = [p for p in parts[1:] if not p.startswith(label)]
    rest = parts[0].rstrip() + "\n" + "".join(f"\n### {p.rstrip()}\n" for p in kept)
    md.write_text(before + SECTION + rest + "\n" + head + "\n\n" + "\n".join(body).rstrip() + "\n")


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        rest = sys.argv[3:]
        return child(Path(sys.argv[2]), rest[1:] if rest[:1] == ["--"] else rest)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warm", type=int, default=3, help="warm runs after the cold one (default 3)")
    parser.add_argument("--fresh-clone", action="store_true", help="also time `make run` on a fresh clone")
    parser.add_argument("--md", type=Path, help="replace this host's section of this Markdown file")
    parser.add_argument("args", nargs="*", help="after --: more arguments for `all --quick`")
    options = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="perfprobe-speed-"))
    try:
        env = {**os.environ, "NUMBA_CACHE_DIR": str(workdir / "numba-cache"), "NO_COLOR": "1"}
        runs = [profiled(["--help"], env, workdir, "--help")]
        quick = ["all", "--quick", *options.args]
        runs.append(profiled([*quick, "--json", "-o", str(workdir / "cold.json")], env, workdir,
                             "all --quick, cold (empty numba cache)"))
        reports = []
        for i in range(options.warm):
            out = workdir / f"warm{i}.json"
            runs.append(profiled([*quick, "--json", "-o", str(out)], env, workdir, f"all --quick, warm {i + 1}"))
            reports.append(str(out))
        baseline = workdir / "baseline.json"
        built = subprocess.run([sys.executable, "-m", "perfprobe", "fleet", *reports, "--baseline-out",
                                str(baseline)], cwd=ROOT, env=env, capture_output=True, text=True)
        if baseline.exists():
            runs.append(profiled(["healthcheck", "--mode", "prolog", "--baseline", str(baseline), "--json"],
                                 env, workdir, "healthcheck, warm"))
        else:
            print(f"no baseline for the health check: {built.stderr.strip()[-300:]}")
        if options.fresh_clone:
            runs.append(fresh_clone_make_run(workdir))
        label = host_label()
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        body = [f"{when}; load average before: {os.getloadavg()[0]:.2f}", "",
                "| run | wall s | exit |", "| --- | ---: | ---: |"]
        body += [f"| {r['tag']} | {r['wall_s']:.1f} | {r['rc']} |" for r in runs]
        body.append("")
        for r in runs:
            if "profile" in r:
                body += table(r)
        print(f"{label}\n" + "\n".join(body))
        if options.md:
            write_section(options.md, label, body)
        return 0 if all(r["rc"] in (0, 1) for r in runs) else 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
