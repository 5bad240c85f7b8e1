"""kernels/host_shares.py: contiguous shares cover the array exactly once, and errors wait for every share."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfprobe.kernels.host_shares import host_pool, over_shares, share_bounds


@given(n=st.integers(1, 10_000), count=st.integers(1, 64), unit=st.sampled_from([1, 4, 64, 4096]))
def test_shares_cover_the_range_once_in_whole_units(n: int, count: int, unit: int) -> None:
    bounds = share_bounds(n, count, unit)
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(hi == next_lo for (_, hi), (next_lo, _) in zip(bounds, bounds[1:]))
    assert all(lo < hi for lo, hi in bounds)
    assert all(lo % unit == 0 for lo, _ in bounds)
    assert 1 <= len(bounds) <= count


def test_over_shares_on_a_pool_computes_what_one_thread_does() -> None:
    data = np.arange(1_000_003, dtype=np.int64)
    with host_pool(4, "test") as pool:
        parts = over_shares(pool, 4, data.size, lambda lo, hi: int(data[lo:hi].sum()))
    assert len(parts) == 4 and sum(parts) == int(data.sum())
    assert over_shares(None, 4, data.size, lambda lo, hi: (lo, hi)) == [(0, data.size)]


def test_an_error_leaves_only_after_every_share_ended() -> None:
    """The caller frees the array next: no share may still be writing it."""
    ended: list[int] = []
    lock = threading.Lock()

    def work(lo: int, hi: int) -> None:
        if lo == 0:
            raise ValueError("first share fails at once")
        time.sleep(0.05)
        with lock:
            ended.append(lo)

    with host_pool(4, "test") as pool:
        with pytest.raises(ValueError):
            over_shares(pool, 4, 400, work)
        assert len(ended) == 3


def test_an_interrupt_in_the_caller_waits_for_the_running_shares(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the caller waits: it leaves only after the running shares ended (the buffers
    they write are freed next), and shares not yet begun never begin."""
    import perfprobe.kernels.host_shares as hs

    ended: list[int] = []
    real_wait = hs.wait
    calls = {"n": 0}

    def interrupted_once(futures):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt
        return real_wait(futures)

    monkeypatch.setattr(hs, "wait", interrupted_once)

    def work(lo: int, hi: int) -> None:
        time.sleep(0.05)
        ended.append(lo)

    with host_pool(2, "test") as pool:
        with pytest.raises(KeyboardInterrupt):
            over_shares(pool, 6, 600, work)
        running_or_done = len(ended)
        time.sleep(0.2)
        assert len(ended) == running_or_done   # nothing still writing after the interrupt left
