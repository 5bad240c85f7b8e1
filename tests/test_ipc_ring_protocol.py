"""The ring's publish demotes its lines only where the kernels are compiled for a CPU with CLDEMOTE:
llvm.x86.cldemote cannot be selected for one without it, so the decision follows what numba
compiles for (the host, or NUMBA_CPU_NAME / NUMBA_CPU_FEATURES for a portable cache)."""

from __future__ import annotations

import pytest
from numba import config

from perfprobe.kernels import ipc_kernels


@pytest.mark.parametrize("name, features, expected", [
    ("generic", "", False),
    ("skylake-avx512", "+avx512f,+cldemote", True),
    ("", "+avx2,-cldemote", False),
])
def test_a_named_cpu_or_feature_set_decides(monkeypatch, name, features, expected):
    monkeypatch.setattr(config, "CPU_NAME", name, raising=False)
    monkeypatch.setattr(config, "CPU_FEATURES", features, raising=False)
    assert ipc_kernels._can_demote() is expected


def test_otherwise_the_hosts_own_features_decide(monkeypatch):
    from llvmlite import binding

    monkeypatch.setattr(config, "CPU_NAME", None, raising=False)
    monkeypatch.setattr(config, "CPU_FEATURES", None, raising=False)
    assert ipc_kernels._can_demote() is bool(binding.get_host_cpu_features().get("cldemote"))

