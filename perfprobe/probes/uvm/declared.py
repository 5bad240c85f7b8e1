"""What `perfprobe uvm` declares (read without importing the probe): --size, headline figures, no key
figures."""

from perfprobe.engine.declaration import Declared, ProbeOption

SIZE = ProbeOption("--size", "bytes", "Buffer size, at least {minimum}, e.g. 256M or 1G.", minimum=1 << 20)

DECLARED = Declared(
    name="uvm", help="Unified memory: on-demand migration, prefetch, advice, zero-copy.",
    options=(SIZE,), gpu=True,
    headline=("ratio.managed_on_demand", "ratio.managed_prefetch", "gbs.explicit_copy", "gbs.zero_copy"),
    key_figures=(),
)
