"""Writes gpumem_synthetic_slow_gpu.json: a SYNTHETIC slow GPU, not a measurement.

Made from the real H200 recording gpumem_h200.json: every DRAM-bound time (bandwidth, strides,
occupancy, transpose) made 3x longer, so the bandwidth is a third of what that H200 measured (the
DCGM #122 case), the memory clock under load read as 1593 MHz of 3201, and NVML's clock-event
reasons set to hardware slowdown + hardware thermal slowdown (0x48). Run from the repo root:
    python tests/data/make_gpumem_synthetic.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent
SLOWER = 3.0


def slow(entry: dict[str, Any]) -> None:
    """Times x3 and GB/s / 3 in one measured case (min and max swap places)."""
    ms, gbs = entry["ms"], entry["gbs"]
    entry["ms"] = {**ms, "median": ms["median"] * SLOWER, "min": ms["min"] * SLOWER, "max": ms["max"] * SLOWER,
                   "iqr": ms["iqr"] * SLOWER}
    entry["gbs"] = {**gbs, "median": gbs["median"] / SLOWER, "min": gbs["min"] / SLOWER,
                    "max": gbs["max"] / SLOWER, "iqr": gbs["iqr"] / SLOWER}


def main() -> None:
    data = json.loads((DATA / "gpumem_h200.json").read_text())
    raw = data["raw"]["gpumem[0]"]
    for kind in ("read", "write", "copy", "d2d_memcpy"):
        slow(raw["dram"][kind])
    for entry in raw["coalescing"]["cases"]:
        slow(entry)
    for points in raw["occupancy"]["series"].values():
        for entry in points:
            slow(entry)
    for kind in ("naive", "tiled", "padded"):
        slow(raw["transpose"][kind])
    for when in ("state_under_load", "state_after"):
        raw[when]["clock_event_reasons"] = 0x48
        raw[when]["mem_clock_mhz"] = 1593
    raw["synthetic"] = ("SYNTHETIC: gpumem_h200.json with every DRAM-bound time x3, memory clock 1593 MHz under "
                        "load, clock-event reasons 0x48; made by tests/data/make_gpumem_synthetic.py")
    (DATA / "gpumem_synthetic_slow_gpu.json").write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
