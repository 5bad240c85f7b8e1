#!/usr/bin/env bash
# Issue 19, `perfprobe p2p` on a machine with two or more GPUs (nvidia-h200-x2 or larger): topology,
# a --quick run over every GPU (--require-gpu, wall time), then bench/bench_p2p.py (builds
# bench/p2p_ref.cu with nvcc; reference, full perfprobe run recorded, reference again; every ordered
# pair's one-way peer, staged and both-ways GB/s within 5%), then both recordings replayed through
# judge. On one GPU the probe must skip with "one GPU: nothing to pair" and the bench says skipped.
# Run from the repo root on the device machine:  bash tools/device/p2p.sh
# PYTHON=... picks the interpreter (default python3). Exit 0 when the probe ran and the bench met its target.
set -u
OUT="${OUT:-/tmp/p2p}"
mkdir -p "$OUT/bench"
export PYTHONPATH=. PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
status=0
nvidia-smi topo -m >"$OUT/topo_m.txt" 2>&1; cat "$OUT/topo_m.txt"
nvidia-smi topo -p2p r >"$OUT/topo_p2p_r.txt" 2>&1; cat "$OUT/topo_p2p_r.txt"
nvidia-smi nvlink -s >"$OUT/nvlink_s.txt" 2>&1; head -40 "$OUT/nvlink_s.txt"
t0=$(date +%s%N)
"$PY" -m perfprobe p2p --quick --require-gpu --json --record "$OUT/p2p_quick.rec.json" \
    >"$OUT/p2p_quick.json" 2>"$OUT/log.txt"
code=$?
t1=$(date +%s%N)
echo "p2p --quick: exit $code, wall $(( (t1 - t0) / 1000000 )) ms"
[ "$code" -gt 1 ] && { status=1; tail -30 "$OUT/log.txt"; }
"$PY" bench/bench_p2p.py --out "$OUT/bench" >"$OUT/bench.txt" 2>&1 || status=1
cat "$OUT/bench.txt"
for rec in "$OUT/p2p_quick.rec.json" "$OUT/bench/p2p_record.json"; do
    [ -f "$rec" ] || { echo "missing $rec"; continue; }
    "$PY" -m perfprobe p2p --json --replay "$rec" >"$OUT/replay.json" 2>>"$OUT/log.txt"
    "$PY" - "$OUT/replay.json" <<'PY' || status=1
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['probe']} {r['verdict']}: {r['summary']}")
    for f in r["findings"]:
        print(f"  {f['verdict']}: {f['message']}")
    print("  ", {k: v["value"] for k, v in r["metrics"].items() if k.startswith(("p2p_gbs", "peer_access"))})
PY
done
exit $status
