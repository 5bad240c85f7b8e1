#!/usr/bin/env bash
# Record `perfprobe uvm` on a GPU host: environment, two --quick runs (timed: must stay under 15 s),
# the default run (4 GiB) and, if time allows, a 1 GiB run. Writes into ${OUT:-./uvm-record}.
# Usage (repo root): bash bench/record_uvm_gpu.sh
set -u
OUT=${OUT:-./uvm-record}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=${PYTHONPATH:-.}
{
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,memory.total,memory.used --format=csv
  python3 -c "import cupy, numba, numpy; r = cupy.cuda.runtime; print('cupy', cupy.__version__, 'numba', numba.__version__, 'numpy', numpy.__version__, 'cuda runtime', r.runtimeGetVersion(), 'driver', r.driverGetVersion())"
  python3 -c "import cuda.bindings as b; print('cuda-bindings', b.__version__)"
  echo "cpus $(nproc)"; free -g | head -2; uname -r
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

run() {  # run NAME TIMEOUT ARGS...: one JSON report + its recording, with wall time
  local name=$1 limit=$2; shift 2
  local start=$(date +%s%N)
  timeout "$limit" python3 -m perfprobe uvm --json --record "$OUT/uvm_${name}_rec.json" "$@" \
    > "$OUT/uvm_${name}.json" 2> "$OUT/stderr.txt"
  local rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "== $name: rc=$rc wall=${ms} ms ($*)" | tee -a "$OUT/env.txt"
  tail -5 "$OUT/stderr.txt" | tee -a "$OUT/env.txt"
  return $rc
}

SECONDS=0
run quick 90 --quick
[ $? -eq 3 ] && { python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print(r['summary'])" "$OUT/uvm_quick.json"; exit 3; }
run quick_again 60 --quick --device 0  # numba's cache is warm now: the usual --quick time
run full 300
[ "$SECONDS" -lt 200 ] && run 1g 120 --size 1G
rm -f "$OUT/stderr.txt"
for f in "$OUT"/uvm_quick.json "$OUT"/uvm_full.json "$OUT"/uvm_1g.json; do
  [ -s "$f" ] || continue
  python3 - "$f" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f"-- {sys.argv[1]}: {r['verdict']} | {r['key_figure']} | {r['duration_s']:.1f} s\n   {r['summary']}")
for f in r["findings"]:
    print(f"   {f['verdict']:5} {f['message'][:230]}")
PY
done
rm -f "$OUT"/uvm_quick.json "$OUT"/uvm_quick_again.json "$OUT"/uvm_1g.json  # the recordings replay them; at most 8 files come back
