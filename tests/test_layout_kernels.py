"""Layout kernels on tiny inputs: a latency chain visits its cycle, loads at any offset run, SIMD is read."""

from __future__ import annotations

import numpy as np

from perfprobe.kernels import layout_kernels as k
from perfprobe.probes.layout.measure import _chain


def test_latency_chain_follows_the_offsets_at_every_width():
    buf = k.aligned_bytes(8 * 64 + 64)
    positions = np.array([3 * 64 + 61, 0 * 64 + 61, 5 * 64 + 61])
    first = _chain(buf, positions)
    for width in k.WIDTHS:
        _, last = k.latency(buf.ctypes.data, first, 3, width)
        assert last == first  # three steps around a three-position cycle
        _, one = k.latency(buf.ctypes.data, first, 1, width)
        assert one == positions[1]


def test_unaligned_loads_run_at_every_width():
    buf = k.aligned_bytes(4096 * 3)
    for width in k.WIDTHS:
        assert k.throughput(buf.ctypes.data + 61, 64, 8, 2, width) >= 0


def test_record_kernels_agree_and_report_simd():
    aos = np.arange(64 * 4, dtype=np.int64).reshape(64, 4)
    soa = np.ascontiguousarray(aos.T)
    assert k.aos_sum(aos, 1, 1)[1] == k.soa_sum(soa, 1, 1)[1] == aos[:, 1].sum()
    assert k.aos_all(aos, 1)[1] == k.soa_all(soa, 1)[1] == aos.sum()
    k.soa_update(soa, 2, 1)
    width, how = k.vector_bytes(k.soa_sum)
    assert width in (0, 16, 32, 64) and "inspect_asm" in how
