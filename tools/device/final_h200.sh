#!/usr/bin/env bash
# The lead's last H200 call of a session: verdict stability under --require-gpu (issue 12), then
# layout/branch quick timings and recordings on the Xeon (issue 15), then the two C benches if time
# is left. One tarball under $OUT (the device tool returns at most 8 files); a summary last.
#   RUNS=3 BENCHES="layout layout alloc" OUT=/tmp/f bash tools/device/final_h200.sh
set -u
OUT="${OUT:-/tmp/final}"; W=/tmp/final_w; mkdir -p "$W" "$OUT"
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
pack() { tar -czf "$OUT/final_h200.tar.gz" -C "$W" .; }
timeout 300 "$PY" tools/verdict_stability.py --runs "${RUNS:-5}" --max-seconds "${BENCH_S:-250}" \
    --out "$W/verdict-stability.md" --save-reports "$W/bench" -- --require-gpu >"$W/bench.log" 2>&1
echo "bench-verdicts exit $? at ${SECONDS}s" | tee -a "$W/exits.txt"; pack
for probe in layout branch; do
    start=$SECONDS
    timeout 60 "$PY" -m perfprobe "$probe" --quick --json --record "$W/${probe}_h200xeon_quick.json" >"$W/$probe.quick.json" 2>"$W/$probe.stderr"
    echo "$probe --quick exit $? in $((SECONDS - start)) s" | tee -a "$W/exits.txt"
done
pack
n=0
for bench in ${BENCHES:-branch layout}; do
    n=$((n + 1))
    if [ "$SECONDS" -lt "${STOP_S:-380}" ]; then
        timeout 120 "$PY" bench/bench_$bench.py >"$W/bench_${bench}_$n.txt" 2>&1
        echo "bench_$bench ($n) exit $? at ${SECONDS}s" | tee -a "$W/exits.txt"; pack
    fi
done
tail -40 "$W/bench.log" | grep -v "^run " ; cat "$W/exits.txt"; tail -12 "$W"/bench_*.txt 2>/dev/null
