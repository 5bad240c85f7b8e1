"""kernels/warmup.py: the recorded signatures read back as numba types, name kernels that exist,
and the children are balanced with each module's kernels kept together."""

from __future__ import annotations

import importlib
import json

import pytest

numba = pytest.importorskip("numba")
from numba.core import types  # noqa: E402

from perfprobe.kernels import warmup  # noqa: E402


@pytest.mark.parametrize("numba_type", [
    types.int64, types.uint64, types.float64, types.boolean,
    types.Array(types.float64, 1, "C"), types.Array(types.uint64, 2, "C", readonly=True),
    types.literal(1), types.Omitted(1),
])
def test_a_type_reads_back_as_itself(numba_type: object) -> None:
    text = json.loads(json.dumps(warmup.encode(numba_type)))
    assert warmup.decode(text) == numba_type


@pytest.mark.parametrize("text", ["int", {"array": "float64"}, {"literal": "x"}, ["int64"], "__import__"])
def test_a_value_no_type_encodes_to_is_refused(text: object) -> None:
    with pytest.raises(ValueError):
        warmup.decode(text)


def test_the_recorded_file_names_kernels_that_exist_with_types_that_read() -> None:
    found = warmup.recorded()
    assert {"cache", "ipc", "layout"} <= set(found)
    for kernels in found.values():
        for kernel in kernels:
            dispatcher = getattr(importlib.import_module(kernel.module), kernel.function)
            assert hasattr(dispatcher, "compile"), kernel
            [warmup.decode(t) for t in kernel.signature]


def test_a_module_stays_in_one_child_and_the_load_is_spread() -> None:
    kernels = [warmup.Kernel(f"m{i % 3}", f"f{i}", ("int64",), seconds=float(i)) for i in range(9)]
    groups = warmup.balanced(kernels, 2)
    assert len(groups) == 2
    for group in groups:
        for module in {k.module for k in group}:
            assert all(k.module != module for other in groups if other is not group for k in other)
    assert sorted(k.function for g in groups for k in g) == sorted(k.function for k in kernels)


def test_an_unreadable_file_means_nothing_is_compiled_ahead(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    bad = tmp_path / "sigs.json"
    bad.write_text("{not json")
    monkeypatch.setattr(warmup, "SIGNATURES", bad)
    warmup.recorded.cache_clear()
    try:
        assert warmup.recorded() == {}
        assert warmup.needed(["cache"]) == []
        assert warmup.compile_ahead([]).compiled == 0
    finally:
        warmup.recorded.cache_clear()


def test_jobs_never_exceed_the_kernels_or_the_cpus() -> None:
    import os

    assert warmup.jobs_for(1) == 1
    assert 1 <= warmup.jobs_for(100) <= len(os.sched_getaffinity(0))


def test_nothing_is_compiled_ahead_for_a_cpu_named_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warmup.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(warmup, "missing", lambda kernels: list(kernels))  # as if the cache were empty
    monkeypatch.setattr(warmup, "compile_ahead", lambda kernels, jobs=None: warmup.Warmed(compiled=len(kernels)))
    assert warmup.before_run(["cache"]).compiled > 0  # without the name: compiled ahead
    monkeypatch.setenv("NUMBA_CPU_NAME", "generic")
    assert warmup.before_run(["cache", "layout"]) is None
