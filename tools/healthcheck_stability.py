"""Health checks on a quiet host: run `perfprobe healthcheck --mode prolog` N times against one
baseline and count the drains. Every drain of an unchanged, quiet host is a false drain.

    python tools/healthcheck_stability.py --baseline B.json --runs 20 [--keep DIR] [-- --probes host,cache]

B.json is a baseline (`perfprobe fleet RUNS/ --baseline-out B.json`, e.g. from the reports
`make bench-compare` keeps) or one healthy report. Prints each check's verdict and problems, then
"false drains: K of N"; exit 0 only when K is 0. --keep DIR writes each check's report there
(checkNN.json, healthcheck -o), so a drain can be read figure by figure afterwards. Checks under a
policy that drains only on consecutive checks (`-- --policy P.json --state DIR`, P holding
regression_checks) count the checks where a regression waited for the next.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def check_once(baseline: Path, extra: list[str], report: Path | None = None) -> tuple[dict, float]:
    """One prolog-mode health check (it never calls scontrol); its JSON verdict and wall time;
    `report`: where it also writes its run's report."""
    started = time.perf_counter()
    keep = ["-o", str(report)] if report else []
    proc = subprocess.run([sys.executable, "-m", "perfprobe", "healthcheck", "--baseline", str(baseline),
                           "--mode", "prolog", "--node", "quiet-host", "--json", *keep, *extra],
                          capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - started
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1]), elapsed
    except (ValueError, IndexError):
        raise SystemExit(f"healthcheck exited {proc.returncode} without a JSON verdict: "
                         f"{proc.stderr.strip()[-400:]}") from None


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    extra = args_in[args_in.index("--") + 1:] if "--" in args_in else []
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="write each check's report here (checkNN.json)")
    args = parser.parse_args(args_in[: args_in.index("--")] if "--" in args_in else args_in)
    drains = spared = waited = 0
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    for i in range(args.runs):
        report = args.keep / f"check{i + 1:02d}.json" if args.keep else None
        verdict, elapsed = check_once(args.baseline, extra, report)
        drained = verdict.get("healthy") is False
        drains += drained
        spared += bool(verdict.get("not_confirmed"))
        waited += bool(verdict.get("waiting"))
        print(f"check {i + 1:2d}: {'DRAIN' if drained else 'healthy'} in {elapsed:.1f} s: {verdict.get('message')}")
    print(f"false drains: {drains} of {args.runs}")
    print(f"checks with a regression the re-measurement did not confirm: {spared} of {args.runs}")
    print(f"checks with a confirmed regression waiting for the next check (regression_checks): {waited} of {args.runs}")
    return 0 if drains == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
