#!/usr/bin/env bash
# Issue 18, `perfprobe gpumem` on the H200: a --quick run over --device all (wall time, --require-gpu),
# then bench/bench_gpumem.py (builds bench/gpumem_ref.cu with nvcc -arch=sm_90 from perfprobe's own
# kernel source; reference, full perfprobe run recorded, reference again; every case within 5%),
# then both recordings replayed through judge. Everything lands in $OUT (at most 8 files).
# Run from the repo root on the device machine:  bash tools/device/gpumem.sh
# PYTHON=... picks the interpreter (default python3). Exit 0 when the probe ran and the bench met its target.
set -u
OUT="${OUT:-/tmp/gpumem}"
mkdir -p "$OUT/bench"
export PYTHONPATH=. PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.memory,clocks.max.sm,clocks.mem,clocks.sm,memory.used,memory.total \
    --format=csv >"$OUT/nvidia_smi.csv" 2>&1
cat "$OUT/nvidia_smi.csv"
t0=$(date +%s%N)
"$PY" -m perfprobe gpumem --quick --device all --require-gpu --json --record "$OUT/gpumem_quick.rec.json" \
    >"$OUT/gpumem_quick.json" 2>"$OUT/log.txt"
code=$?
t1=$(date +%s%N)
echo "gpumem --quick --device all: exit $code, wall $(( (t1 - t0) / 1000000 )) ms"
[ "$code" -gt 1 ] && { status=1; tail -30 "$OUT/log.txt"; }
"$PY" bench/bench_gpumem.py --out "$OUT/bench" >"$OUT/bench.txt" 2>&1 || status=1
cat "$OUT/bench.txt"
for rec in "$OUT/gpumem_quick.rec.json" "$OUT/bench/gpumem_record.json"; do
    [ -f "$rec" ] || { echo "missing $rec"; status=1; continue; }
    "$PY" -m perfprobe gpumem --json --replay "$rec" >"$OUT/replay.json" 2>>"$OUT/log.txt"
    "$PY" - "$OUT/replay.json" <<'PY' || status=1
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['probe']}[{r['device']}] {r['verdict']}: {r['summary']}")
    for f in r["findings"]:
        print(f"  {f['verdict']}: {f['message']}")
    print("  ", {k: v["value"] for k, v in r["metrics"].items()})
PY
done
exit $status
