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


# numba's AoS one-field loop on the Zen 4 guest (abridged): a scalar loop stepping by the stride
# register, and a zmm loop for a unit stride that K >= 2 never runs.
_AOS_ASM = """f:
.LBB0_21:
\taddq\t(%r8), %rbp
\taddq\t(%r8,%r12), %rbp
\taddq\t%r12, %r8
\taddq\t$8, %r15
\tjne\t.LBB0_21
.LBB0_9:
\tvpaddq\t-192(%r10,%rcx,8), %zmm0, %zmm0
\tvpaddq\t(%r10,%rcx,8), %zmm3, %zmm3
\taddq\t$32, %rcx
\tcmpq\t%rcx, %r9
\tjne\t.LBB0_9
\tretq
"""


def test_the_strided_reading_ignores_the_unit_stride_vector_loop():
    from perfprobe.kernels.compiled import loop_vector_bytes

    assert loop_vector_bytes(_AOS_ASM) == 64
    assert k.strided_vector_bytes(_AOS_ASM) == 0
    gathered = _AOS_ASM.replace("\taddq\t(%r8), %rbp", "\tvpgatherqq\t(%r8,%zmm1,8), %zmm2 {%k1}")
    assert k.strided_vector_bytes(gathered) == 64


def test_aos_one_field_loops_report_scalar_here():
    aos = np.ones((64, 8), dtype=np.int64)
    k.aos_sum(aos, 0, 1)
    width, how = k.vector_bytes(k.aos_sum)
    assert width == 0 and "stride" in how


def test_record_buffer_starts_on_a_huge_page_boundary():
    buf = k.record_buffer(16384)
    assert buf.ctypes.data % k.HUGE_PAGE == 0 and buf.size == 2048 and int(buf.sum()) == 2048
