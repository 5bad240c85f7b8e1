"""What `perfprobe numa` declares (read without importing the probe): options, headline and key figures."""

from perfprobe.engine.declaration import Declared, ProbeOption

DECLARED = Declared(
    name="numa", help="NUMA: topology, latency and bandwidth matrices, remote penalties, placement.",
    options=(ProbeOption("--size", "bytes", "Working set per memory node, at least {minimum}, e.g. 256M (default: "
                         "several times the largest cache).", minimum=16 << 20),),
    headline=("remote_over_local_latency.max", "latency_ns.0.0", "read_gbs.0.0"),
    key_figures=("latency_ns.*", "read_gbs.*"),
    # --quick budget: about 1.5x the slowest warm run below (0.5 s at least), headroom for a busier host;
    # H200 machine's 16-CPU guest (one node), warm: 0.6-0.8 s (docs/benchmarks.md, tests/data/compare_runs_*);
    # 2-vCPU guest 0.3-0.5 s. A host of more nodes measures a matrix: longer
    quick_budget_s=1.5,
)
