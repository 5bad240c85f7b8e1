#!/usr/bin/env bash
# Issues 15, 16 and 17 on the H200 machine's Xeon in one call: layout and branch (recordings, timed
# --quick, both C references), ipc (recordings, timed --quick, bench_ipc), alloc (recording, timed
# --quick, bench_alloc). Everything lands in one tarball, "$OUT/cpu_benches.tgz" (the device returns
# at most 8 files); the bench tables are printed last. Run from the repository root:
#   OUT=/tmp/cb bash tools/device/cpu_benches.sh          (ONLY="layout_branch alloc" runs those parts)
set -u
ONLY=${ONLY:-"layout_branch ipc alloc"}
want() { case " $ONLY " in *" $1 "*) return 0;; esac; return 1; }
OUT=${OUT:-/tmp/cpu_benches}; W=/tmp/cpu_benches_work; rm -rf "$W"; mkdir -p "$W" "$OUT"
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
uptime > "$W/uptime.txt"
want layout_branch && OUT="$W/layout_branch" timeout 240 bash tools/device/layout_branch.sh > "$W/layout_branch.log" 2>&1
uptime >> "$W/uptime.txt"
want ipc && OUT="$W/ipc" timeout 200 bash tools/device/ipc.sh > "$W/ipc.log" 2>&1
uptime >> "$W/uptime.txt"
want alloc && OUT="$W/alloc" timeout 150 bash tools/device/alloc.sh > "$W/alloc.log" 2>&1
uptime >> "$W/uptime.txt"
rm -rf "$W"/*/numba-cache "$W"/*/w/numba_cache
tar czf "$OUT/cpu_benches.tgz" -C "$W" .
cat "$W/uptime.txt" "$W/layout_branch/times.txt" 2>/dev/null
grep -E "NO|MISSED|met" "$W/layout_branch/bench_layout.txt" "$W/layout_branch/bench_branch.txt"
grep -E "quick|full|rc=" "$W/ipc/times.txt" 2>/dev/null; grep -E "^(uds|pipe|tcp|shm)|target" "$W/ipc/bench_ipc.txt" 2>/dev/null | cut -c1-100
cat "$W/alloc/bench_alloc.txt" 2>/dev/null | cut -c1-120
