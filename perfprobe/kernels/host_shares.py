"""Untimed host work over large arrays, split into contiguous shares on a pool of host threads.

Why: the GPU probes write, poison and check buffers of hundreds of MiB around their timed steps. On
one thread that was 2.7 s of a warm `uvm --quick` (54 fills of 256 MiB; for managed memory each fill
is the pages' migration back to the host) and 0.8 s of `streams --quick` (poisoning and comparing its
outputs) on the H100 host (docs/benchmarks.md). numpy releases the GIL inside its loops and fills, so
Python threads run the shares at once. The pool's threads inherit the CPUs of the thread that starts
them, the process's: under `--bind` the pages they first touch land on the bound node, as one
thread's did; without it, on a host of several nodes, they spread over the nodes the threads ran
on, as the readers that sum them (uvm's host_sum_parallel) do.
"""

from __future__ import annotations

from concurrent.futures import Executor, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")


def share_bounds(n: int, count: int, unit: int = 1) -> list[tuple[int, int]]:
    """[lo, hi) of `count` contiguous shares of range(n), each a whole number of `unit`s (the last
    takes the remainder); fewer shares when there are fewer units than `count`."""
    units = max(1, n // unit)
    count = max(1, min(count, units))
    edges = [units * i // count * unit for i in range(count)] + [n]
    return list(zip(edges[:-1], edges[1:]))


def over_shares(workers: Executor | None, count: int, n: int, work: Callable[[int, int], T],
                unit: int = 1) -> list[T]:
    """work(lo, hi) for each share, on `workers` (inline without one); the results in order.

    Every share has ended (or was cancelled before it began) before an error leaves, a Ctrl-C
    included, so the caller may free the array right after."""
    bounds = share_bounds(n, count if workers is not None else 1, unit)
    if workers is None or len(bounds) == 1:
        return [work(lo, hi) for lo, hi in bounds]
    futures = [workers.submit(work, lo, hi) for lo, hi in bounds]
    try:
        wait(futures)
    except BaseException:  # Ctrl-C in this thread: the shares still running end before it leaves
        for future in futures:
            future.cancel()
        wait(futures)
        raise
    return [future.result() for future in futures]


@contextmanager
def host_pool(threads: int, name: str) -> Iterator[Executor]:
    """A pool of `threads` host threads for over_shares, joined on the way out (also on errors)."""
    with ThreadPoolExecutor(max(1, threads), thread_name_prefix=name) as pool:
        yield pool
