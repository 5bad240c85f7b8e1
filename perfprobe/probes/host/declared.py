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
    # --quick budget: about 1.5x the slowest warm run below (0.5 s at least), headroom for a busier host;
    # reads files and times nothing: 0.00 s on both hosts of docs/benchmarks.md's Speed section
    quick_budget_s=0.5,
)
