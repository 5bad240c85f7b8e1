#!/usr/bin/env bash
# Issue 12 on the H200 machine. Run from the repo root:  bash tools/device/verdicts.sh PHASE
#   PHASE 1: each probe --quick twice (JSON + recordings), what RLIMIT_MEMLOCK limits as root and as
#            an ordinary user (nobody), and what NVML and the GPU probes see while a second process
#            keeps the GPU busy.
#   PHASE 2: make bench-verdicts N=5 -- --require-gpu, then the GPU planted faults.
# Everything lands in one tarball under $OUT (the device tool returns at most 8 files); a summary last.
set -u
OUT="${OUT:-/tmp/verdicts}"
W="$OUT/w"
mkdir -p "$W"
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
phase="${1:-1}"

BUDGET_S="${BUDGET_S:-250}"  # stop starting new steps after this many seconds, so the tarball is made
probe_once() {  # probe tag [args...]: JSON report, recording, exit code
    local probe=$1 tag=$2; shift 2
    if [ "$SECONDS" -gt "$BUDGET_S" ]; then echo "$probe $tag not run (time)" | tee -a "$W/exits.txt"; return; fi
    timeout 150 "$PY" -m perfprobe "$probe" --quick --json --record "$W/$probe.$tag.rec.json" "$@" \
        >"$W/$probe.$tag.json" 2>"$W/$probe.$tag.stderr"
    echo "$probe $tag exit $?" | tee -a "$W/exits.txt"
}

gpu_hog() {  # a second process keeping the SMs and memory busy (the planted-fault harness's hog)
    "$PY" -c 'import cupy as cp, time
x = cp.ones(1 << 28, dtype=cp.float32); t = time.time() + 600
while time.time() < t:
    for _ in range(20): x = x * 1.0000001 + 0.0
    cp.cuda.Device().synchronize()' &
    HOG=$!
    sleep 3
}

nvml_activity() {  # tag: what kernels/nvml.py's activity() reads now, from a process with a context
    "$PY" - "$1" >>"$W/nvml_activity.jsonl" 2>>"$W/nvml_activity.stderr" <<'PY'
import json, sys, time
from perfprobe.kernels import cuda_runtime, nvml
cupy = cuda_runtime.load_cupy()
bus = cuda_runtime.pci_bus_id(cupy, 0)
session = nvml.Nvml(bus)
before = session.activity()
cupy.zeros(1 << 20)  # this process now has a context on the GPU
time.sleep(0.5)
after = session.activity()
print(json.dumps({"tag": sys.argv[1], "no_context": before, "with_context": after, "error": session.error}))
PY
}

if [ "$phase" = 1 ]; then
    nvidia-smi --query-gpu=name,driver_version,utilization.gpu,memory.used --format=csv >"$W/smi.txt" 2>&1
    # what RLIMIT_MEMLOCK limits: root (CAP_IPC_LOCK) and nobody, at 1 MiB and at nobody's default
    prlimit --memlock=1048576:1048576 "$PY" tools/device/memlock_check.py >"$W/memlock_root_1m.jsonl" 2>&1
    mkdir -p /tmp/h && cp tools/device/memlock_check.py /tmp/h/ && chmod -R a+rwX /tmp/h
    as_nobody() { runuser -u nobody -- env HOME=/tmp/h CUPY_CACHE_DIR=/tmp/h/cupy NUMBA_CACHE_DIR=/tmp/h/numba "$@"; }
    as_nobody sh -c 'ulimit -l' >"$W/memlock_nobody_default_limit.txt" 2>&1
    as_nobody prlimit --memlock=1048576:1048576 "$PY" /tmp/h/memlock_check.py >"$W/memlock_nobody_1m.jsonl" 2>&1
    as_nobody "$PY" /tmp/h/memlock_check.py >"$W/memlock_nobody_default.jsonl" 2>&1
    # every probe twice, as they are now
    probe_once host r1
    for probe in numa branch; do probe_once "$probe" r1; done
    for run in r1 r2; do
        for probe in pinned streams uvm; do probe_once "$probe" "$run" --require-gpu; done
        for probe in cache falseshare; do probe_once "$probe" "$run"; done
    done
    # a second process on the GPU: NVML's view, and pinned and streams beside it
    nvml_activity idle
    gpu_hog
    nvml_activity hog
    probe_once pinned hog --require-gpu
    probe_once streams hog --require-gpu
    kill "$HOG"; wait "$HOG" 2>/dev/null
fi

if [ "$phase" = 2 ]; then
    # the device tool allows 300 s a call here: CUDA_VISIBLE_DEVICES first (seconds), then the bench
    # (no new run after BENCH_S), then the GPU hog with what is left; each writes its own record
    timeout 60 "$PY" tools/planted_faults.py --runs 5 --gpu --only CUDA --out "$W/planted-faults.md" >"$W/planted_cuda.log" 2>&1
    echo "planted CUDA exit $?" | tee -a "$W/exits.txt"
    timeout 230 "$PY" tools/verdict_stability.py --runs "${BENCH_RUNS:-5}" --max-seconds "${BENCH_S:-150}" \
        --out "$W/verdict-stability.md" --save-reports "$W/bench" -- --require-gpu >"$W/bench.log" 2>&1
    echo "bench-verdicts exit $?" | tee -a "$W/exits.txt"
    left=$(( 285 - SECONDS ))
    if [ "$left" -gt 30 ]; then
        timeout "$left" "$PY" tools/planted_faults.py --runs 5 --gpu --only GPU --out "$W/planted-faults.md" >"$W/planted_gpu.log" 2>&1
        echo "planted GPU exit $? ($left s allowed)" | tee -a "$W/exits.txt"
    else
        echo "planted GPU not run: $left s left" | tee -a "$W/exits.txt"
    fi
fi

tar -czf "$OUT/verdicts_phase$phase.tar.gz" -C "$W" .
rm -rf "$W"
# summary: each report's verdict and its non-pass findings
tar -xzf "$OUT/verdicts_phase$phase.tar.gz" -C /tmp --one-top-level=vsum 2>/dev/null || { mkdir -p /tmp/vsum; tar -xzf "$OUT/verdicts_phase$phase.tar.gz" -C /tmp/vsum; }
"$PY" - /tmp/vsum <<'PY'
import glob, json, os, sys
root = sys.argv[1]
for path in sorted(glob.glob(f"{root}/*.json")) + sorted(glob.glob(f"{root}/bench/*.json")):
    if path.endswith(".rec.json"):
        continue
    try:
        report = json.load(open(path))
    except ValueError:
        print(os.path.basename(path), "no JSON"); continue
    for r in report["results"]:
        bad = [f"{f['verdict']}: {f['message'][:110]}" for f in r["findings"] if f["verdict"] != "pass"]
        print(os.path.basename(path), r["probe"], r["verdict"], round(r["duration_s"], 1), *bad, sep=" | ")
for name in ("exits.txt", "memlock_root_1m.jsonl", "memlock_nobody_1m.jsonl", "memlock_nobody_default.jsonl",
             "memlock_nobody_default_limit.txt", "nvml_activity.jsonl", "nvml_activity.stderr", "smi.txt"):
    p = f"{root}/{name}"
    if os.path.exists(p):
        print(f"--- {name}"); print(open(p).read()[-3000:])
for p in glob.glob(f"{root}/*.md") + glob.glob(f"{root}/planted_*.log"):
    print(f"--- {os.path.basename(p)}"); print(open(p).read()[-2500:])
PY
