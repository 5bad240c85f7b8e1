#!/usr/bin/env bash
# Issue 16 on the H200 machine (16 cores): the C reference beside perfprobe (bench/bench_alloc.py),
# `perfprobe alloc --record` (full), and --quick cold (empty numba cache) then warm.
# Run from the repo root; everything lands in one tarball under "$OUT" and a summary is printed last.
set -u
OUT=${OUT:-/tmp/alloc_out}; W="$OUT/w"; mkdir -p "$W"
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
nproc > "$W/nproc.txt"; cat /sys/kernel/mm/transparent_hugepage/enabled > "$W/thp.txt"
ls /usr/lib/x86_64-linux-gnu/ | grep -Ei "jemalloc|tcmalloc|mimalloc" > "$W/allocators.txt" 2>&1
export NUMBA_CACHE_DIR="$W/numba_cache"
TIMEFORMAT="%R s wall"
timed() { local tag=$1; shift; { time "$@" ; } 2>> "$W/$tag.err"; echo "rc=$?" >> "$W/$tag.err"; }
timed quick_cold timeout 100 python3 -m perfprobe alloc --quick --json > "$W/quick_cold.json"
timed quick_warm timeout 60 python3 -m perfprobe alloc --quick --json > "$W/quick_warm.json"
timed full timeout 100 python3 -m perfprobe alloc --record "$W/alloc_h200_full.json" > "$W/full.txt"
timeout 120 python3 bench/bench_alloc.py > "$W/bench_alloc.txt" 2>&1; echo "bench rc=$?" >> "$W/bench_alloc.txt"
rm -rf "$W/numba_cache"
tar czf "$OUT/alloc_h200.tgz" -C "$W" .
cp "$W/alloc_h200_full.json" "$W/bench_alloc.txt" "$OUT/" 2>/dev/null
tail -n 2 "$W/quick_cold.err" "$W/quick_warm.err" "$W/full.err"
grep -E "PASS|WARN|ERROR" "$W/full.txt" | cut -c1-170
cat "$W/bench_alloc.txt"
