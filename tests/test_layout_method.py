"""The page test's positions, and the C reference measuring as the probe does (pure: no kernel run).

The page-split figures once read 11-13x in the probe and 1.3-2x in bench/layout_ref.c because the C
timed one short run and the probe a median of repeats after Python had run between them; these tests
fail when the two methods drift apart again, or when a page position stops straddling a boundary.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from perfprobe.probes.layout import figures, measure, plan

ROOT = Path(__file__).resolve().parent.parent
C_SOURCE = (ROOT / "bench" / "layout_ref.c").read_text()
BENCH = (ROOT / "bench" / "bench_layout.py").read_text()


@pytest.mark.parametrize("width", plan.WIDTHS)
def test_page_splits_straddle_a_boundary_half_each_side(width):
    buf = plan.page_buffer_bytes()
    for pos in plan.page_positions(width, split=True):
        boundary = (pos // plan.PAGE_BYTES + 1) * plan.PAGE_BYTES
        assert boundary - pos == width // 2 and pos + width - boundary == width // 2
        assert plan.PAGE_BYTES <= pos and pos + width <= buf   # page 0 never loaded; all in the buffer


@pytest.mark.parametrize("width", plan.WIDTHS)
def test_page_aligned_loads_start_distinct_pages(width):
    positions = plan.page_positions(width, split=False)
    assert all(p % plan.PAGE_BYTES == 0 for p in positions)
    assert len({p // plan.PAGE_BYTES for p in positions}) == plan.PAGE_SPLITS


def test_the_c_reference_times_as_the_probe_does():
    """An untimed run, then REPEATS timed runs back to back: the best for throughput and the median
    for latency (figures.statistic), for both split and page modes."""
    timed = C_SOURCE[C_SOURCE.index("static void timed_point("):]
    timed = timed[:timed.index("\n}\n")]
    assert re.search(r"\n\s+tp\(w, .*reps\);\n\s+for \(int i", timed), "no untimed run before the timed ones"
    assert re.search(r"\n\s+lat\(w, .*steps\);\n\s+for \(int i", timed), "no untimed chain before the timed ones"
    assert timed.count("if (page) touch(") == 4   # both pages loaded before every page-mode run, as the probe
    assert "minimum(t, repeats)" in timed and "median(l, repeats)" in timed
    assert C_SOURCE.count("timed(w, buf,") == 2   # split and page
    assert figures.statistic("throughput") == "min" and figures.statistic("latency") == "median"


def test_the_probe_times_a_point_as_the_c_does():
    """The runs of a throughput point back to back in one compiled call, the untimed first dropped."""
    source = inspect.getsource(measure._throughput)
    assert "throughput_runs(" in source and "settings.repeats + 1" in source and "[1:]" in source


def test_the_bench_runs_the_probes_own_page_point_with_its_settings():
    assert "page_point(k, buf, w, split, settings)" in BENCH
    assert "st.repeats" in BENCH and "plan.page_positions(" in BENCH


def test_the_c_latency_step_keeps_the_full_width_load():
    """Each load is inline asm of its full width (gcc narrowed an 8-byte load to the 4 bytes used,
    which then never splits at offset 60), addressed base+index in rsi/rdi as LLVM addresses the
    probe's load (r13 as the base needs a disp8: a cycle more on Zen 4)."""
    body = C_SOURCE[C_SOURCE.index("static inline uint32_t next_of"):]
    body = body[:body.index("\n}\n")]
    for load in ("movl (%1,%2), %0", "movq (%1,%2), %0"):
        assert body.count(load) == 1
    assert body.count("vmovdqu (%1,%2), %0") == 2
    assert body.count(': "S"(base), "D"(o)') == 4


def _c_template(width: int) -> list[str]:
    line = next(x for x in C_SOURCE.splitlines() if x.startswith(f"#define TP_ASM_{width} "))
    literal = line.split(" ", 2)[2].strip().strip('"')
    return literal.replace("%%", "%").split("\\n\\t")


@pytest.mark.parametrize("width", (4, 8, 16, 32))
def test_the_c_throughput_loop_is_the_kernels_own_asm(width):
    """Both sides run the one pinned loop (registers, alignment, loop counters): when the compilers
    chose their own, the aligned page-test loads differed by 20-25%."""
    from perfprobe.kernels.layout_kernels import throughput_asm

    assert _c_template(width) == throughput_asm(width)


def test_the_c_records_time_a_point_as_the_probe_does():
    """Passes inside one timed call (no clock per 100 ns pass), the set evicted by clflushopt before a
    DRAM pass, buffers from a 2 MiB boundary, and the bench runs the probe's own _record_point."""
    point = C_SOURCE[C_SOURCE.index("static double record_point("):]
    point = point[:point.index("\n}\n")]
    assert "evict(a, n * k * 8)" in point and "passes(" in point and "median(t, repeats)" in point
    assert "MADV_HUGEPAGE" in C_SOURCE and "vec_t a0 = {t}" in C_SOURCE
    assert "_record_point(k, level, fields, n, lay" in BENCH and "k.record_buffer(" in BENCH
