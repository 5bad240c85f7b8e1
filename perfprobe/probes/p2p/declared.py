"""What `perfprobe p2p` declares (read without importing the probe): --size (at least 1 MiB: smaller
copies measure launch overhead, not a link), headline figures (the first pair), no key figures."""

from perfprobe.engine.declaration import Declared, ProbeOption

SIZE = ProbeOption("--size", "bytes", "Buffer size, at least {minimum}, e.g. 256M or 1G.", minimum=1 << 20)

DECLARED = Declared(
    name="p2p", help="GPU-to-GPU copies over NVLink or PCIe: peer access, bandwidth and latency matrices against "
    "the links (all GPUs unless --device lists them).",
    options=(SIZE,), gpu=True,
    headline=("p2p_gbs.0.1", "p2p_bidir_gbs.0.1", "p2p_latency_us.0.1", "p2p_fraction.0.1"),
    key_figures=(),
    # --quick budget: an estimate, not a measurement: no multi-GPU quick run is recorded (one GPU: it skips in
    # 0.01 s); at most 6 pairs of a few copies each (plan.PRESETS.quick), peer setup included
    quick_budget_s=4.0,
)
