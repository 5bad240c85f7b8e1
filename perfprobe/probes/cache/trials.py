"""DRAM latency and DRAM read as independent trials: one figure per buffer, several buffers held at once.

Why (issue 25; docs/results/compare-stability.md): on shared VMs a CPU memory figure moved 15–35%
between quiet runs while each run's repeats over its one buffer agreed within 1–4%. Buffers held at
the same time land on different physical memory, and some read 20–30% slower (the host backs guest
memory unevenly): six 32 MiB buffers of one process on a 2-vCPU guest read 111–156 ns, and the
median over the six moved 114–125 ns between processes, where one buffer's figure moved 115–158.
Buffers allocated one after another and freed in between get the same pages back, so they do not
sample that; held at once, they do. Each trial's figure is the median of its own repeats; the
figure is the median over the trials, whose samples are the trials (`summarize(..., trials=True)`):
its spread is what another run may read, and compare judges the median by its standard error.

The first trial is the latency curve's own buffer (its point at the DRAM set, already timed), so a
run faults in TRIALS - 1 more buffers, not TRIALS. The one-thread read trials read the same buffers
where the threads that read them share one NUMA node (first touch placed nothing then); across
nodes they get buffers of their own, first touched by their readers. The all-thread read is no
trial: each thread reads a set as large as one thread's (plan.threads_dram_bytes), in an array of
their own or, where they share a node, over the span the trial buffers were sliced from (already
faulted in, refilled by them), so its repeats are its samples.

`kernels` is perfprobe.kernels.cache_kernels, passed in (nothing here imports numba).
"""

from __future__ import annotations

from contextlib import contextmanager
from types import ModuleType
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from perfprobe.host.facts import Facts, numa_nodes
from perfprobe.probes.cache import timing as m
from perfprobe.probes.cache.buffers import HUGE_ALIGN, page_buffer
from perfprobe.pure.stats import Stat, summarize

TRIALS = 5
"""Buffers a DRAM figure is measured over: 5 against 5 is the smallest U test that reaches p < 0.01."""
REPEATS_PER_TRIAL = 3


def more_buffers(trial_bytes: int, cap_bytes: int | None, held_bytes: int, wanted: int = TRIALS - 1) -> int:
    """How many more buffers of `trial_bytes` may be held beside `held_bytes` under the plan's
    memory cap (None: no cap could be read, nothing is capped)."""
    if trial_bytes <= 0:
        return 0
    if not cap_bytes:
        return wanted
    return max(0, min(wanted, (cap_bytes - held_bytes) // trial_bytes))


def one_node(host: Facts, cpus: Sequence[int]) -> bool:
    """Whether `cpus` all sit on one NUMA node (or the host lists at most one)."""
    nodes = [set(n.get("cpus") or ()) for n in numa_nodes(host)]
    if len(nodes) <= 1:
        return True
    return sum(1 for node in nodes if node & set(cpus)) <= 1


@contextmanager
def held_buffers(count: int, size: int, huge: bool,
                 touch: Callable[[np.ndarray], None] | None = None) -> Iterator[list[np.ndarray]]:
    """`count` fresh buffers of `size` bytes (uint64), all held until the block ends, each first
    touched by `touch` where given (held_together, without its span)."""
    with held_together(count, size, huge, touch) as together:
        try:
            yield together[1]
        finally:
            del together


@contextmanager
def held_together(count: int, size: int, huge: bool, touch: Callable[[np.ndarray], None] | None = None
                  ) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
    """The span of one fresh mapping (buffers.page_buffer, first touched by `touch` where given)
    and `count` buffers of `size` bytes (uint64) sliced from it, each starting on a 2 MiB boundary
    so its huge pages are whole; all held until the block ends. Each buffer is its own physical
    pages, as separate mappings were. Why one mapping: the all-thread read may run over the span
    the trials already faulted in (read_trials' `room`) instead of faulting in a mapping of its
    own. On the 2-vCPU EPYC guest memory new to the process cost the host about 4 ms a MiB to back
    (12-07 04:45 UTC: 128 MiB in 0.51 s, 64 MiB in 0.19-0.26 s on two threads), which was a third
    of a warm `cache --quick`; pages the process freed came back at once."""
    stride = -(-size // HUGE_ALIGN) * HUGE_ALIGN
    words, size_words = stride // m.WORD, size // m.WORD
    with page_buffer(count * stride, huge, np.uint64, touch) as span:
        yield span, [span[i * words:i * words + size_words] for i in range(count)]
        del span


def over_trials(per_trial: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One figure from its trials: the median over the trials' medians, the trials its samples
    (one trial: that trial's own repeats, which are not independent of each other)."""
    if len(per_trial) == 1:
        return dict(per_trial[0])
    return {**summarize([float(t["median"]) for t in per_trial], trials=True),
            "repeats_per_trial": min(int(t.get("repeats") or 1) for t in per_trial)}


def latency_trials(k: ModuleType, buffers: Sequence[np.ndarray], size: int, line: int, timing: m.Timing,
                   first: Stat | None = None, seed: int = 1, dram: bool = False) -> dict[str, Any]:
    """Random-chase latency over `size` bytes of each buffer (each linked with its own permutation,
    seeds from `seed` on), beside `first` (a trial already timed), as one figure over the trials;
    `dram`: the set is the one DRAM latency is read at (timing.warm_loads)."""
    each = m.Timing(timing.run_s, REPEATS_PER_TRIAL, timing.all_threads_s)
    per_trial: list[Mapping[str, Any]] = [first] if first else []
    per_trial += [m.random_chase_ns(k, buf, size, line, each, seed=seed + i, dram=dram)
                  for i, buf in enumerate(buffers)]
    return over_trials(per_trial)


def read_trials(k: ModuleType, buffers: Sequence[np.ndarray], size: int, cpus: Sequence[int],
                timing: m.Timing, all_bytes: int | None, huge: bool = False,
                room: np.ndarray | None = None) -> dict[str, Any]:
    """DRAM read GB/s: one thread over `size` bytes of each buffer (refilled by the threads on
    `cpus` first), as a figure over the trials; then one thread on each of `cpus`, each over its
    own share of `all_bytes` (plan.threads_dram_bytes: one thread's set each, where memory allows)
    in a mapping of their own (2 MiB pages where `huge`) or in `room` where it holds `all_bytes`
    (the held trial buffers' span, held_together: refilled by the threads, as a mapping of their
    own would be; only where they share a node, for first touch places nothing then), its repeats
    the figure's samples; where memory leaves no room for one (`all_bytes` None), over their
    shares of the first buffer.
    m.read_rates' shape; the all-thread read keeps `handoff_ns` (m.with_handoffs: where its threads
    sat while it was timed)."""
    each = m.Timing(timing.run_s, REPEATS_PER_TRIAL, timing.all_threads_s)
    one = [m.read_one_in(k, buf.view(np.float64)[:size // m.WORD], size, cpus, each) for buf in buffers]
    threads = max(1, len(cpus))
    if all_bytes is None:
        share = size // threads
        together = m.with_handoffs(cpus, lambda: m.read_all(k, share, cpus, timing, buffers[0].view(np.float64)))
    else:
        share = all_bytes // threads
        inside = room.view(np.float64) if room is not None and share * threads <= room.nbytes else None
        together = m.with_handoffs(cpus, lambda: m.read_all(k, share, cpus, timing, inside, huge=huge))
    return {"bytes_1t": size // m.WORD * m.WORD, "bytes_each": share // m.WORD * m.WORD,
            "1t": over_trials(one), "all": together}
