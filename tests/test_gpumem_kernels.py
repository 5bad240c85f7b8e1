"""The gpumem kernels without a GPU: the source holds every kernel perfprobe launches, the CUDA C
reference keeps the probe's launch shapes and repeats, and the probe package loads no kernel."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from perfprobe.kernels import gpumem_kernels as gk
from perfprobe.probes.gpumem import plan

REF = (Path(__file__).resolve().parents[1] / "bench" / "gpumem_ref.cu").read_text()


def ref_constant(name: str) -> str:
    found = re.search(rf"\b{name} = ([^,;]+)", REF)
    assert found, name
    return found.group(1).strip()


def ref_list(name: str) -> list[int]:
    found = re.search(rf"{name}\[\] = \{{([^}}]*)\}}", REF)
    assert found, name
    return [int(x) for x in found.group(1).split(",")]


def test_every_launched_kernel_is_in_the_source() -> None:
    defined = set(re.findall(r'extern "C" __global__ void (\w+)', gk.SOURCE))
    defined |= {name for name, _cols in re.findall(r"PERFPROBE_TILED\((\w+), (\d+)\)", gk.SOURCE)}
    assert set(gk.NAMES) <= defined


def test_the_reference_keeps_the_probes_shapes_and_repeats() -> None:
    full = plan.PRESETS.full
    assert int(ref_constant("kBlock")) == plan.BLOCK
    assert int(ref_constant("kWarm")) == full.warmup and int(ref_constant("kReps")) == full.repeats
    assert int(ref_constant("kOccReps")) == full.occupancy_repeats
    assert int(ref_constant("kSmemReps")) == plan.SMEM_REPS
    assert int(ref_constant("kDivergeIters")) == plan.DIVERGE_ITERS
    assert int(ref_constant("kGateNs")) == gk.GATE_NS
    assert ref_constant("kOccupancyBytes") == f"size_t({plan.OCCUPANCY_BYTES >> 20}) << 20"
    assert ref_list("strides") == list(plan.STRIDES)
    assert ref_list("smem_strides") == list(plan.SMEM_STRIDES)
    assert ref_list("warps_list") == list(plan.WARPS_PER_SM)


def test_the_reference_check_sees_a_drifted_constant() -> None:
    assert re.search(r"\bkBlock = ([^,;]+)", REF.replace("kBlock = 256", "kBlock = 128")).group(1) != str(plan.BLOCK)


def test_the_probe_package_loads_no_kernel_until_measured() -> None:
    code = "import sys, perfprobe.probes.gpumem\nprint(' '.join(sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "perfprobe.probes.gpumem" in loaded
    assert not [m for m in loaded if m.startswith("perfprobe.kernels") or m.endswith(".measure")]


def test_the_chunk_check_compares_on_the_host() -> None:
    import numpy as np

    class Fake:
        def __init__(self, values: np.ndarray) -> None:
            self.values, self.size = values, values.size

        def __getitem__(self, s: slice) -> "Fake":
            return Fake(self.values[s])

        def get(self) -> np.ndarray:
            return self.values

    ones = np.ones(100_000, dtype=np.float32)
    assert gk.chunks_equal(Fake(ones), gk.constant(1.0))
    ones[-1] = 0
    assert not gk.chunks_equal(Fake(ones), gk.constant(1.0))
