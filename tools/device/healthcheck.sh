#!/usr/bin/env bash
# `perfprobe healthcheck` wall time, median of 5 (issue 13: under 20 s on the H200 machine, under 15 s
# on the 2-core machine). Runs anywhere from the repo root:  bash tools/device/healthcheck.sh
# (PYTHON=.venv/bin/python on the 2-core machine). A baseline is made from one `all --quick` run on
# this host; then 5 timed checks against it (--dry-run: scontrol is printed, not called).
# PROBES=host,cache (the default set) or e.g. PROBES=host,cache,pinned. Results under $OUT.
set -u
OUT="${OUT:-/tmp/healthcheck_timing}"
mkdir -p "$OUT"
export PYTHONPATH=.
PY="${PYTHON:-python3}"
PROBES="${PROBES:-host,cache}"
# The baseline must hold a figure of every probe asked (healthcheck refuses one that does not, exit 2):
# one `all --quick` run of this host holds them all.
"$PY" -m perfprobe all --quick --output "$OUT/first.json" >/dev/null 2>&1
"$PY" -m perfprobe fleet "$OUT/first.json" --baseline-out "$OUT/baseline.json" >/dev/null
: >"$OUT/times.txt"
for i in 1 2 3 4 5; do
    "$PY" - "$OUT/check$i.txt" "$PY" -m perfprobe healthcheck --baseline "$OUT/baseline.json" --probes "$PROBES" \
        --node timing --dry-run >>"$OUT/times.txt" <<'PY'
import subprocess, sys, time
start = time.perf_counter()
with open(sys.argv[1], "w") as log:
    code = subprocess.run(sys.argv[2:], stdout=log, stderr=log).returncode
print(f"{time.perf_counter() - start:.2f}")
PY
    echo "run $i: $(tail -1 "$OUT/times.txt") s: $(tail -1 "$OUT/check$i.txt")"
done
median=$(sort -n "$OUT/times.txt" | sed -n 3p)
echo "healthcheck --probes $PROBES: median of 5 = $median s (runs: $(tr '\n' ' ' <"$OUT/times.txt")) on $(hostname), $(nproc) CPUs" \
    | tee "$OUT/summary.txt"
