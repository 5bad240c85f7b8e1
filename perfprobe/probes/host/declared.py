"""What `perfprobe host` declares (read without importing the probe): no --quick or --bind, since it
times nothing; --fsroot reads a captured tree instead of this host."""

from perfprobe.engine.declaration import Declared, ProbeOption

DECLARED = Declared(
    name="host", help="What this host is and how it is set up: CPUs, caches, NUMA, THP, governor, GPUs.",
    timed=False,
    options=(ProbeOption("--fsroot", "dir", "Read a captured tree (DIR/sys, DIR/proc) instead of this host.",
                         into="run"),),
    headline=("cpus.usable", "memory.total_bytes"),
    key_figures=("cpus.online", "cpus.usable", "memory.total_bytes", "gpus", "numa.nodes"),
)
