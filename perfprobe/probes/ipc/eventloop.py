"""The event-loop ping-pong of `perfprobe ipc`: the scheduler's side written as a Python asyncio
program (streams over a Unix socket, as a Python scheduler would talk to its worker), under the
standard loop and under uvloop when it is installed. The worker answers with the compiled echo, so
the difference to the compiled round trip is what the Python loop adds to each message.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import socket
import time
from typing import Any, Callable

from perfprobe.pure.stats import summarize


async def _pingpong(sock: socket.socket, size: int, count: int) -> list[float]:
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    message, out = bytes(size), []
    try:
        for _ in range(count):
            start = time.perf_counter_ns()
            writer.write(message)
            await reader.readexactly(size)
            out.append((time.perf_counter_ns() - start) / 1000.0)
    finally:
        writer.close()
    return out


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop to use: asyncio's own, or uvloop's (None when uvloop is not installed)."""
    if name == "asyncio":
        return asyncio.new_event_loop
    if importlib.util.find_spec("uvloop") is None:
        return None
    # uvloop is measured where it happens to be installed (the H200 image has it); perfprobe does
    # not depend on it, so it is looked up by name rather than imported as a dependency.
    factory: Callable[[], asyncio.AbstractEventLoop] = importlib.import_module("uvloop").new_event_loop
    return factory


def run_pingpong(factory: Callable[[], asyncio.AbstractEventLoop], sock: socket.socket, size: int,
                 count: int, warmup: int, timeout_s: float) -> dict[str, Any]:
    """Round-trip times in µs through one event loop (the first `warmup` left out)."""
    loop = factory()
    try:
        samples = loop.run_until_complete(asyncio.wait_for(_pingpong(sock, size, count), timeout_s))
    finally:
        loop.close()
    kept = samples[warmup:] or samples
    ordered = sorted(kept)
    return {"rtt_us": dict(summarize(kept), p99=ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]),
            "messages": count, "size": size}
