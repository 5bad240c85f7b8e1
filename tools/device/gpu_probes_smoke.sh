#!/usr/bin/env bash
# The GPU probes after their move to packages (issue 11), on the H200: pinned, streams and uvm with
# --quick, each with --json and --record into $OUT, plus a replay of each recording through judge.
# Run from the repo root on the device machine:  bash tools/device/gpu_probes_smoke.sh
# PYTHON=... picks the interpreter (default python3). Exit 0 when every probe ran to pass or warn (exit 0/1) and its replay gave the same verdict.
set -u
OUT="${OUT:-/tmp/gpu_probes_smoke}"
mkdir -p "$OUT"
export PYTHONPATH=.
PY="${PYTHON:-python3}"
status=0
for probe in pinned streams uvm; do
    "$PY" -m perfprobe "$probe" --quick --require-gpu --json --record "$OUT/$probe.rec.json" \
        >"$OUT/$probe.json" 2>"$OUT/$probe.stderr"
    code=$?
    echo "$probe --quick: exit $code"
    if [ "$code" -gt 1 ]; then
        status=1
        "$PY" -c 'import json,sys; [print("  ", r["verdict"], r["summary"]) for r in json.load(open(sys.argv[1]))["results"]]' \
            "$OUT/$probe.json" 2>/dev/null || tail -5 "$OUT/$probe.stderr"
        continue
    fi
    "$PY" -m perfprobe "$probe" --json --replay "$OUT/$probe.rec.json" >"$OUT/$probe.replay.json" 2>/dev/null
    "$PY" - "$OUT/$probe.json" "$OUT/$probe.replay.json" <<'PY' || status=1
import json, sys
live, replay = (json.load(open(p)) for p in sys.argv[1:3])
for result in live["results"]:
    print(f"  {result['probe']}[{result['device']}] {result['verdict']}: {result['summary']}")
    for finding in result["findings"]:
        print(f"    {finding['verdict']}: {finding['message']}")
same = [r["verdict"] for r in live["results"]] == [r["verdict"] for r in replay["results"]]
print("  replay gives the same verdicts" if same else "  REPLAY DIFFERS")
sys.exit(0 if same and all(r["verdict"] in ("pass", "warn") for r in live["results"]) else 1)
PY
done
exit $status
