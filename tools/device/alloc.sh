#!/usr/bin/env bash
# Issue 16 on the H200 machine (16 cores): the C reference beside perfprobe (bench/bench_alloc.py),
# `perfprobe alloc --record` (full), and --quick cold (empty numba cache) then warm.
# Run from the repo root; writes under "$OUT".
set -u
OUT=${OUT:-/tmp/alloc_out}; mkdir -p "$OUT"
export PYTHONPATH=.
nproc > "$OUT/nproc.txt"; cat /sys/kernel/mm/transparent_hugepage/enabled > "$OUT/thp.txt"
ls /usr/lib/x86_64-linux-gnu/ | grep -Ei "jemalloc|tcmalloc|mimalloc" > "$OUT/allocators.txt" 2>&1
export NUMBA_CACHE_DIR="$OUT/numba_cache"
/usr/bin/time -f "%e s wall (cold)" python3 -m perfprobe alloc --quick --json > "$OUT/quick_cold.json" 2> "$OUT/quick_cold.err"
/usr/bin/time -f "%e s wall (warm)" python3 -m perfprobe alloc --quick --json > "$OUT/quick_warm.json" 2> "$OUT/quick_warm.err"
/usr/bin/time -f "%e s wall (full)" python3 -m perfprobe alloc --record "$OUT/alloc_h200_full.json" > "$OUT/full.txt" 2> "$OUT/full.err"
python3 bench/bench_alloc.py > "$OUT/bench_alloc.txt" 2>&1; echo "bench rc=$?" >> "$OUT/bench_alloc.txt"
rm -rf "$OUT/numba_cache"
tail -1 "$OUT/quick_cold.err" "$OUT/quick_warm.err" "$OUT/full.err"
grep -E "PASS|WARN|ERROR" "$OUT/full.txt" | cut -c1-160
cat "$OUT/bench_alloc.txt"
