"""Memory taken by the GPU probes is freed by pointer in `Allocations.close`, also after a CUDA
error: tested with a stand-in for cupy's runtime (no GPU here), which records the calls."""

from __future__ import annotations

import ctypes

import pytest

from fake_cuda import FakeRuntime, fake_cupy
from perfprobe.kernels.transfer_kernels import Allocations


@pytest.mark.parametrize("sync_error", [False, True])
def test_close_frees_every_pointer_after_waiting_for_the_device(sync_error: bool) -> None:
    runtime = FakeRuntime(sync_error=sync_error)
    allocations = Allocations(fake_cupy(runtime))
    pinned = [allocations.pinned(4096)[0] for _ in range(2)]
    device = [allocations.device(1 << 20) for _ in range(3)]
    allocations.close()
    names = [name for name, _ in runtime.calls]
    assert names[0] == "sync"
    assert sorted(p for n, p in runtime.calls if n == "free") == sorted(device)
    assert sorted(p for n, p in runtime.calls if n == "freeHost") == sorted(pinned)
    assert names.count("pool") == 2


def test_pinned_view_writes_reach_the_allocation() -> None:
    runtime = FakeRuntime()
    allocations = Allocations(fake_cupy(runtime))
    ptr, view = allocations.pinned(64)
    view.fill(0xA5)
    assert ctypes.string_at(ptr, 64) == b"\xa5" * 64
    allocations.close()


def test_close_twice_frees_once() -> None:
    runtime = FakeRuntime()
    allocations = Allocations(fake_cupy(runtime))
    allocations.device(4096)
    allocations.close()
    allocations.close()
    assert [n for n, _ in runtime.calls].count("free") == 1
