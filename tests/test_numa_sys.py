"""numa_sys: node masks, and the real system calls on this host (a private mapping of our own)."""

from __future__ import annotations

import ctypes
import mmap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfprobe.system import numa_sys


@given(st.sets(st.integers(min_value=0, max_value=numa_sys.MASK_BITS - 1), max_size=40))
def test_mask_round_trip(nodes):
    assert numa_sys.mask_to_nodes(numa_sys.nodes_to_mask(nodes)) == sorted(nodes)


@pytest.mark.parametrize("node", [-1, numa_sys.MASK_BITS])
def test_mask_rejects_nodes_out_of_range(node):
    with pytest.raises(ValueError):
        numa_sys.nodes_to_mask([node])


def test_this_thread_policy_and_allowed_nodes_are_readable():
    policy = numa_sys.get_mempolicy()
    assert policy.mode in numa_sys.MODE_NAMES.values()
    assert numa_sys.mems_allowed()  # at least one node to allocate on
    assert numa_sys.numa_syscalls_available() == (True, "")


def test_mbind_places_and_move_pages_reports_where_pages_are():
    node = numa_sys.mems_allowed()[0]
    size = 4 * mmap.PAGESIZE
    region = mmap.mmap(-1, size)
    anchor = ctypes.c_char.from_buffer(region)
    base = ctypes.addressof(anchor)
    del anchor
    try:
        numa_sys.mbind(base, size, numa_sys.MPOL_BIND, [node], numa_sys.MPOL_MF_STRICT)
        pages = [base + k * mmap.PAGESIZE for k in range(4)]
        assert all(s < 0 for s in numa_sys.page_nodes(pages))  # not faulted in yet: -ENOENT
        region[:] = b"x" * size
        assert numa_sys.page_nodes(pages) == [node] * 4
        assert numa_sys.node_of_address(base) == node
    finally:
        region.close()


def test_mbind_to_a_node_that_does_not_exist_is_an_os_error():
    region = mmap.mmap(-1, mmap.PAGESIZE)
    anchor = ctypes.c_char.from_buffer(region)
    base = ctypes.addressof(anchor)
    del anchor
    try:
        with pytest.raises(OSError):
            numa_sys.mbind(base, mmap.PAGESIZE, numa_sys.MPOL_BIND, [numa_sys.MASK_BITS - 2])
    finally:
        region.close()
