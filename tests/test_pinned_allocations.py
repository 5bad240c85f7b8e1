"""Memory taken by the GPU probes is freed by pointer in `Allocations.close`, also after a CUDA
error: tested with a stand-in for cupy's runtime (no GPU here), which records the calls."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest

from perfprobe.kernels.transfer_kernels import Allocations


class FakeRuntime:
    def __init__(self, sync_error: bool = False) -> None:
        self.calls: list[tuple[str, int]] = []
        self.sync_error = sync_error
        self._host = []  # real memory behind the fake "pinned" pointers
        self._next_device = 0x7000_0000

    def hostAlloc(self, nbytes: int, flags: int) -> int:
        buffer = ctypes.create_string_buffer(nbytes)
        self._host.append(buffer)
        return ctypes.addressof(buffer)

    def malloc(self, nbytes: int) -> int:
        self._next_device += nbytes
        return self._next_device

    def deviceSynchronize(self) -> None:
        self.calls.append(("sync", 0))
        if self.sync_error:
            raise RuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")

    def free(self, ptr: int) -> None:
        self.calls.append(("free", ptr))

    def freeHost(self, ptr: int) -> None:
        self.calls.append(("freeHost", ptr))


def fake_cupy(runtime: FakeRuntime) -> SimpleNamespace:
    pool = SimpleNamespace(free_all_blocks=lambda: runtime.calls.append(("pool", 0)))
    return SimpleNamespace(cuda=SimpleNamespace(runtime=runtime), get_default_memory_pool=lambda: pool,
                           get_default_pinned_memory_pool=lambda: pool)


@pytest.mark.parametrize("sync_error", [False, True])
def test_close_frees_every_pointer_after_waiting_for_the_device(sync_error: bool) -> None:
    runtime = FakeRuntime(sync_error)
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
