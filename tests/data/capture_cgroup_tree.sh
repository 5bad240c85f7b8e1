#!/bin/sh
# Capture the cgroup files perfprobe reads (and the CPU/memory basics) of a process run inside a
# fresh cgroup v1 group with a CPU quota, a memory limit and a pids limit, into DEST (a tree for
# `perfprobe host --fsroot DEST`). Run as root on a host with cgroup v1 cpu, memory and pids
# hierarchies; the groups are removed afterwards. Used once for tests/data/cgroup_v1_quota.
set -eu
DEST=$1; QUOTA=${2:-20000}; MEM=${3:-314572800}; PIDS=${4:-64}
id=perfprobe-capture-$$
own() { grep ":$1:" /proc/self/cgroup | cut -d: -f3; }
CPU=/sys/fs/cgroup/cpu$(own cpu)/$id; MEMG=/sys/fs/cgroup/memory$(own memory)/$id; PID=/sys/fs/cgroup/pids$(own pids)/$id
mkdir -p "$CPU" "$MEMG" "$PID"
echo "$QUOTA" > "$CPU/cpu.cfs_quota_us"; echo "$MEM" > "$MEMG/memory.limit_in_bytes"; echo "$PIDS" > "$PID/pids.max"
sh -c "for g in $CPU $MEMG $PID; do echo \$\$ > \$g/cgroup.procs; done
  t=\$(date +%s); while [ \$(date +%s) -lt \$((t + 1)) ]; do :; done   # be throttled a few times
  mkdir -p $DEST/proc/self $DEST/sys/devices/system/cpu
  cp /proc/self/cgroup /proc/self/mountinfo $DEST/proc/self/; cp /proc/mounts /proc/meminfo /proc/cpuinfo $DEST/proc/
  for f in online possible present; do cp /sys/devices/system/cpu/\$f $DEST/sys/devices/system/cpu/; done
  for g in $CPU $MEMG $PID; do
    mkdir -p $DEST\$g $DEST\$(dirname \$g)
    for f in cpu.cfs_quota_us cpu.cfs_period_us cpu.stat memory.limit_in_bytes memory.usage_in_bytes pids.max pids.current; do
      [ -f \$g/\$f ] && cat \$g/\$f > $DEST\$g/\$f || true
      [ -f \$(dirname \$g)/\$f ] && cat \$(dirname \$g)/\$f > $DEST\$(dirname \$g)/\$f || true
    done
  done"
rmdir "$CPU" "$MEMG" "$PID"
