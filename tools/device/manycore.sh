#!/usr/bin/env bash
# Issue 21 on the lent H200 machine's 16-core Xeon: the many-core benches beside their C references
# (bench/run_all.py --manycore: latency per level, DRAM read/triad thread sweep against OpenMP bound
# one thread a core, core-to-core pairs against C ping-pong), the generated code of both sides, and
# `perfprobe cache` / `falseshare` reports with the placement they used. Run from the repo root:
#   OUT=/tmp/mc bash tools/device/manycore.sh          (VARIANTS=1 adds the unpinned/unbound rows)
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/manycore}
mkdir -p "$OUT"
{ lscpu; nproc; python3 -c "import numba, llvmlite; print('numba', numba.__version__, 'llvmlite', llvmlite.__version__)";
  gcc --version | head -1; cat /sys/kernel/mm/transparent_hugepage/enabled; git log --oneline -1; } > "$OUT/host.txt" 2>&1
# generated code: vector width and non-temporal stores of the triad/read loops, both sides
gcc -O3 -march=native -mno-avx512f -fopenmp -S -o /tmp/cache_ref.s bench/cache_ref.c
echo "C (gcc -march=native -mno-avx512f): movnt $(grep -c movnt /tmp/cache_ref.s) ymm $(grep -c ymm /tmp/cache_ref.s) zmm $(grep -c zmm /tmp/cache_ref.s)" >> "$OUT/host.txt"
timeout 120 python3 - >> "$OUT/host.txt" 2>&1 <<'PY'
import numpy as np, numba
from perfprobe.kernels import cache_kernels as k, placement as pl
from perfprobe.kernels.compiled import loop_vector_bytes
p = pl.Placed([0, 1]); a, b, c = np.ones(4096), np.ones(4096), np.ones(4096)
for f, args in ((k.triad_placed, (a, b, c, 3.0, p.masks, p.where, 1)), (k.read_sum_placed, (a, p.masks, p.where, 1))):
    twin = numba.njit(parallel=True)(f.py_func); twin(*args)
    asm = "".join(twin.inspect_asm().values())
    print(f"numba {f.__name__}: movnt {asm.count('movnt')} loop vector bytes {loop_vector_bytes(asm)} zmm {asm.count('zmm')}")
PY
timeout 200 python3 bench/bench_cache.py --manycore ${VARIANTS:+--variants} 2>&1 | tee "$OUT/bench_cache_manycore.txt"
timeout 60 python3 bench/bench_falseshare.py --manycore --json "$OUT/pairs.json" 2>&1 | tee "$OUT/bench_falseshare_manycore.txt"
timeout 100 python3 -m perfprobe cache -o "$OUT/cache.json" > "$OUT/cache.txt" 2>&1
timeout 40 python3 -m perfprobe falseshare --quick -o "$OUT/falseshare.json" > /dev/null 2>&1
cat "$OUT/host.txt" | tail -4
grep -A12 "DRAM bandwidth against" "$OUT/cache.txt"; grep -i "saturat" "$OUT/cache.txt"
