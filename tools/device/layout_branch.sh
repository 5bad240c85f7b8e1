#!/usr/bin/env bash
# Issue 15 on the H200 machine's Xeon: record `perfprobe layout` and `perfprobe branch` (full and
# --quick, cold and warm numba cache timed) and run both C references side by side.
# Run from the repository root; results go under $OUT (copy the *.json into tests/data/ as
# layout_h200xeon_*.json / branch_h200xeon_*.json and the bench text into docs/benchmarks.md).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONPATH=. PYTHONUNBUFFERED=1
export NUMBA_CACHE_DIR="$OUT/numba-cache"   # a cold cache first, so both times are real
{ echo "host: $(grep -m1 'model name' /proc/cpuinfo)"; nproc; uptime; } > "$OUT/host.txt"
# bash's own `time` (the bare device machine may have no /usr/bin/time)
run_timed() { local label=$1; shift; local t0 t1; t0=$(date +%s.%N); "$@"; t1=$(date +%s.%N)
  echo "$label $(echo "$t1 - $t0" | bc 2>/dev/null || "$PY" -c "print(round($t1-$t0,2))") s" >> "$OUT/times.txt"; }
for probe in layout branch; do
  run_timed "$probe quick cold" "$PY" -m perfprobe $probe --quick --record "$OUT/${probe}_h200xeon_quick_cold.json" --json > "$OUT/${probe}_quick_cold.report.json" 2>> "$OUT/stderr.txt"
  run_timed "$probe quick warm" "$PY" -m perfprobe $probe --quick --record "$OUT/${probe}_h200xeon_quick.json" --json > "$OUT/${probe}_quick.report.json" 2>> "$OUT/stderr.txt"
  run_timed "$probe full warm" "$PY" -m perfprobe $probe --record "$OUT/${probe}_h200xeon_full.json" --json > "$OUT/${probe}_full.report.json" 2>> "$OUT/stderr.txt"
done
"$PY" bench/bench_branch.py > "$OUT/bench_branch.txt" 2>&1; echo "bench_branch rc=$?" >> "$OUT/times.txt"
"$PY" bench/bench_layout.py > "$OUT/bench_layout.txt" 2>&1; echo "bench_layout rc=$?" >> "$OUT/times.txt"
cat "$OUT/times.txt"
