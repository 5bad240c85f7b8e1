#!/usr/bin/env bash
# Issue 28 on the GPU machine: where a warm `perfprobe PROBE --quick` spends its time, one cProfile
# per probe (default: the GPU probes that dominate a warm `all --quick`), the cumulative top of each
# printed, the .prof files kept under $OUT.
#   OUT=/tmp/o PROBES="uvm streams" bash tools/device/profile_probes.sh
set -u
OUT=${OUT:-/tmp/profile_probes}; mkdir -p "$OUT"
PROBES=${PROBES:-"uvm streams pinned"}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
for probe in $PROBES; do
    case " pinned streams uvm gpumem p2p " in *" $probe "*) gpu=--require-gpu;; *) gpu=;; esac  # CPU probes lack it
    "$PY" -m perfprobe "$probe" --quick $gpu -o "$OUT/$probe.warmup.json" > /dev/null 2>&1  # numba's cache filled
    "$PY" -m cProfile -o "$OUT/$probe.prof" -m perfprobe "$probe" --quick $gpu --record "$OUT/$probe.rec.json" \
        -o "$OUT/$probe.json" > /dev/null 2>&1
    echo "== $probe (exit $?)"
    "$PY" - "$OUT/$probe.prof" <<'PYEOF'
import pstats, sys
stats = pstats.Stats(sys.argv[1])
stats.sort_stats("cumulative")
rows = [(f, s) for f, s in stats.stats.items()]
rows.sort(key=lambda r: -r[1][3])
shown = 0
for (file, line, name), (cc, nc, tt, ct, callers) in rows:
    if ct < 0.05 or "importlib" in file or "typer" in file or "click" in file or "runpy" in file:
        continue
    print(f"{ct:7.3f} {tt:7.3f} {nc:6d}  {file.split('site-packages/')[-1].split('/work/')[-1][-60:]}:{line} {name}")
    shown += 1
    if shown >= 45:
        break
PYEOF
done
