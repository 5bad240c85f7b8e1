"""What `perfprobe ipc` declares (read without importing the probe): headline figures, no key figures."""

from perfprobe.engine.declaration import Declared

DECLARED = Declared(
    name="ipc", help="IPC: round trips and streams over sockets, pipes, TCP and a shared-memory ring; event-loop cost.",
    headline=("rtt_us.uds.64B", "rtt_us.pipe.64B", "rtt_us.tcp.64B", "rtt_us.shm_futex.64B", "asyncio_overhead_us"),
    key_figures=(),
    # --quick budget: about 1.5x the slowest warm run below (0.5 s at least), headroom for a busier host;
    # H200 machine's 16-CPU guest, warm: 2.3-2.8 s (docs/benchmarks.md); 2-vCPU guest 1.6-2.9 s
    # (5-7 s in 4 of 10 runs of tests/data/compare_runs_kvm2c_quick.json: re-measured)
    quick_budget_s=4.5,
)
