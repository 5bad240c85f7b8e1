#!/usr/bin/env bash
# Issues 25 and 28 on the H200 machine in one call: bench-compare (5 runs, every ordered pair, and
# each run against a baseline of the other four), bench-planted on those runs, 20 health checks
# against a baseline of them (their reports kept in runs/health), then bench-speed (cold, 2 warm,
# a health check). The Markdown the tools write (their host sections) and the runs come back under
# $OUT; a summary is printed last.
#   OUT=/tmp/o bash tools/device/compare_speed_h200.sh       (STEPS="compare planted health speed")
#   OUT=/tmp/o STEPS="health speed" RUNS_FROM=.devruns/runs.tgz bash tools/device/compare_speed_h200.sh
#   STEPS="scan compare health": first tools/core_scan.py for SCAN_S seconds (default 45): L1/L2
#   latency and the clock on each CPU in turn, to tell one core's slowdowns from the package's.
# The machine lacks jsonschema: carry .whl (README "device") and install it first, as the caller does.
set -u
STEPS=${STEPS:-"compare planted health speed"}
want() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
OUT=${OUT:-/tmp/compare_speed}; W=/tmp/compare_speed_w; rm -rf "$W"; mkdir -p "$W" "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
cp docs/results/compare-stability.md "$W/compare-stability.md"; cp docs/benchmarks.md "$W/benchmarks.md"
pack() { tar -czf "$OUT/runs.tgz" -C "$W" runs 2>/dev/null; cp "$W"/*.md "$W"/*.log "$OUT/" 2>/dev/null; }
uptime > "$W/steps.log"
# RUNS_FROM: a runs.tgz an earlier call brought back (carried), for health without compare
if [ -n "${RUNS_FROM:-}" ]; then tar -xzf "$RUNS_FROM" -C "$W"; fi
if want scan; then
    timeout $(( ${SCAN_S:-45} + 15 )) "$PY" tools/core_scan.py --seconds "${SCAN_S:-45}" --json "$W/scan.json" \
        > "$W/scan.log" 2>&1
    echo "scan exit $? at ${SECONDS}s" | tee -a "$W/steps.log"; cp "$W/scan.json" "$OUT/" 2>/dev/null
fi
if want compare; then
    timeout 280 "$PY" tools/compare_stability.py --runs 5 --ordered --against-baseline --out "$W/runs" \
        --md "$W/compare-stability.md" -- --require-gpu > "$W/compare.log" 2>&1
    echo "compare exit $? at ${SECONDS}s" | tee -a "$W/steps.log"; pack
fi
if want planted; then
    timeout 170 "$PY" tools/planted_changes.py --runs "$W/runs" --jobs 12 --md "$W/compare-stability.md" \
        > "$W/planted.log" 2>&1
    echo "planted exit $? at ${SECONDS}s" | tee -a "$W/steps.log"; pack
fi
if want health; then
    "$PY" -m perfprobe fleet "$W"/runs/run0?.json --baseline-out "$W/baseline.json" > /dev/null 2>&1
    timeout "${HEALTH_S:-170}" "$PY" tools/healthcheck_stability.py --baseline "$W/baseline.json" --runs 20 \
        --keep "$W/runs/health" > "$W/health.log" 2>&1
    echo "health exit $? at ${SECONDS}s" | tee -a "$W/steps.log"; pack
fi
if want speed; then
    timeout 200 "$PY" tools/bench_speed.py --warm 2 --md "$W/benchmarks.md" -- --require-gpu > "$W/speed.log" 2>&1
    echo "speed exit $? at ${SECONDS}s" | tee -a "$W/steps.log"; pack
fi
uptime >> "$W/steps.log"; pack
cat "$W/steps.log"; grep -E "^(l1|l2|ghz):" "$W/scan.log" 2>/dev/null
grep -E "pairs with|need|against" "$W/compare.log" | head -8
tail -25 "$W/planted.log" 2>/dev/null; tail -4 "$W/health.log" 2>/dev/null; grep -E "wall|exit" "$W/speed.log" 2>/dev/null | head -8
