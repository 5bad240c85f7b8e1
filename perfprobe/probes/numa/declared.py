"""What `perfprobe numa` declares (read without importing the probe): options, headline and key figures."""

from perfprobe.engine.declaration import Declared, ProbeOption

DECLARED = Declared(
    name="numa", help="NUMA: topology, latency and bandwidth matrices, remote penalties, placement.",
    options=(ProbeOption("--size", "bytes", "Working set per memory node, at least {minimum}, e.g. 256M (default: "
                         "several times the largest cache).", minimum=16 << 20),),
    headline=("remote_over_local_latency.max", "latency_ns.0.0", "read_gbs.0.0"),
    key_figures=("latency_ns.*", "read_gbs.*"),
)
