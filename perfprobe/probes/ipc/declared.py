"""What `perfprobe ipc` declares (read without importing the probe): headline figures, no key figures."""

from perfprobe.engine.declaration import Declared

DECLARED = Declared(
    name="ipc", help="IPC: round trips and streams over sockets, pipes, TCP and a shared-memory ring; event-loop cost.",
    headline=("rtt_us.uds.64B", "rtt_us.pipe.64B", "rtt_us.tcp.64B", "rtt_us.shm_futex.64B", "asyncio_overhead_us"),
    key_figures=(),
)
