"""What `perfprobe alloc` declares (read without importing the probe): options, headline figures, no
key figures. Whether an --allocator file exists is checked by check_knobs (the probe's __init__)."""

from perfprobe.engine.declaration import Declared, ProbeOption

DECLARED = Declared(
    name="alloc", help="Allocation: malloc/free per allocator and thread count, pools, first touch, copy against move.",
    options=(
        ProbeOption("--size", "bytes", "Largest buffer (first touch, DRAM memcpy), at least {minimum}, e.g. 256M "
                    "(default: 128M first touch, 4x the last-level cache copied; within a quarter of the available "
                    "memory).", minimum=4 << 20),
        ProbeOption("--allocator", "files", "Also measure this allocator library (exports malloc and free); "
                    "repeatable. jemalloc, tcmalloc and mimalloc are looked for anyway.", field="allocators"),
    ),
    headline=("malloc_ns.1t.mixed", "malloc_ns.all.mixed", "pool_speedup.1t.mixed", "first_touch_ns.4K"),
    key_figures=(),
    # --quick budget: about 1.5x the slowest warm run below (0.5 s at least), headroom for a busier host;
    # 2-vCPU guest, warm: 1.4-2.7 s (docs/benchmarks.md, tests/data/compare_runs_kvm2c_quick.json);
    # H200 machine's 16-CPU guest 1.0-1.5 s
    quick_budget_s=4.0,
)
