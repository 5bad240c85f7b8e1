#!/usr/bin/env bash
# Issue 17 on the H200 machine's Xeon: record `perfprobe ipc` (--quick cold and warm numba cache,
# timed, and the full run) and run the C reference side by side (bench/bench_ipc.py).
# Run from the repository root; results go under $OUT (copy the *.json into tests/data/ as
# ipc_h200_*.json and the bench text into docs/benchmarks.md).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONPATH=. PYTHONUNBUFFERED=1
export NUMBA_CACHE_DIR="$OUT/numba-cache"   # a cold cache first, so both times are real
{ echo "host: $(grep -m1 'model name' /proc/cpuinfo)"; nproc; uptime; lscpu | grep -Ei 'thread|core|socket|numa'; \
  "$PY" -c 'import numba, sys; print("numba", numba.__version__, sys.version.split()[0])'; \
  "$PY" -c 'import uvloop; print("uvloop", uvloop.__version__)' 2>&1 | tail -1; cat /proc/sys/net/core/wmem_max; } > "$OUT/host.txt" 2>&1
/usr/bin/time -f "ipc quick cold %e s" "$PY" -m perfprobe ipc --quick --record "$OUT/ipc_h200_quick_cold.json" --json > /dev/null 2>> "$OUT/times.txt"
/usr/bin/time -f "ipc quick warm %e s" "$PY" -m perfprobe ipc --quick --record "$OUT/ipc_h200_quick.json" --json > "$OUT/ipc_quick.report.json" 2>> "$OUT/times.txt"
/usr/bin/time -f "ipc full warm %e s" "$PY" -m perfprobe ipc --record "$OUT/ipc_h200_full.json" --json > /dev/null 2>> "$OUT/times.txt"
timeout 150 "$PY" bench/bench_ipc.py > "$OUT/bench_ipc.txt" 2>&1; echo "bench_ipc rc=$?" >> "$OUT/times.txt"
rm -rf "$OUT/numba-cache"
ls /dev/shm >> "$OUT/times.txt"; ls -d /tmp/perfprobe-ipc-* >> "$OUT/times.txt" 2>&1
cat "$OUT/times.txt" "$OUT/host.txt" "$OUT/bench_ipc.txt"
"$PY" -c "
import json; r=json.load(open('$OUT/ipc_quick.report.json'))['results'][0]; print(r['verdict'], r['summary'])
for f in r['findings']: print(' ', f['verdict'], f['message'][:200])"
