"""What `perfprobe layout` declares (read without importing the probe): headline figures, no key figures."""

from perfprobe.engine.declaration import Declared

DECLARED = Declared(
    name="layout", help="Data layout: split loads (line, page) against aligned, AoS against SoA per cache level.",
    headline=("split_penalty.line.8B", "split_penalty.page.8B", "load_ns.aligned.8B", "soa_speedup.k8.dram"),
    key_figures=(),
)
