"""What `perfprobe gpumem` shows: metrics, tables, curves, summary and facts, no judgement."""

from __future__ import annotations

from typing import Any, Literal

from perfprobe.engine.model import Cell, Curve, Metric, Table
from perfprobe.host.facts import Facts
from perfprobe.probes.gpu_raw import STATES
from perfprobe.probes.gpumem import figures as fig
from perfprobe.probes.gpumem.figures import Raw
from perfprobe.pure.stats import metric
from perfprobe.pure.units import format_bytes

LABELS = {"read": "read kernel", "write": "write kernel", "copy": "copy kernel (read + write)",
          "d2d_memcpy": "cudaMemcpy D2D (read + write)"}


def summary(raw: Raw, host: Facts) -> str:
    kind, best = fig.best_dram(raw)
    return (f"DRAM {best:.0f} GB/s ({kind}){_share(raw)}; stride 2 {fig.coalesce_slowdown(raw, 2):.1f}x slower, "
            f"32-way bank conflict {fig.bank_slowdown(raw, 32):.1f}x, {fig.warps_to_saturate(raw)[0]} warps/SM "
            f"to saturate, tiled transpose {fig.transpose_speedup(raw):.1f}x, divergence "
            f"{fig.divergence_slowdown(raw):.1f}x")


def key_figure(raw: Raw, host: Facts) -> str:
    return f"{fig.best_dram(raw)[1]:.0f} GB/s{_share(raw)}"


def _share(raw: Raw) -> str:
    share, peak = fig.fraction_of_peak(raw), fig.peak(raw)
    return f" ({share:.0%} of {peak['gbs']:.0f})" if share is not None and peak else ""


def metrics(raw: Raw, host: Facts) -> dict[str, Metric]:
    """Timed figures carry their repeats (stats.metric); the peak (a fact), the buffer size, the
    slowdowns and speed-ups (two timed figures over each other) and warp counts stay plain."""
    out = {f"dram_gbs.{k}": metric(fig.dram_stat(raw, k), "GB/s", 1) for k in ("read", "write", "copy")}
    out["d2d_memcpy_gbs"] = metric(fig.dram_stat(raw, "d2d_memcpy"), "GB/s", 1)
    peak = fig.peak(raw)
    out["dram_peak_gbs"] = Metric(round(peak["gbs"], 1) if peak else None, "GB/s")
    out["dram_fraction_of_peak"] = (metric(fig.dram_stat(raw, fig.best_dram(raw)[0]), "ratio", 3, scale=1 / peak["gbs"])
                                    if peak else Metric(None, "ratio"))
    out["buffer_bytes"] = Metric(int(raw["dram"]["buffer_bytes"]), "bytes")
    for stride in (2, 4, 8, 16, 32):
        out[f"coalesce_slowdown.stride{stride}"] = Metric(round(fig.coalesce_slowdown(raw, stride), 2), "x")
    out["coalesce_slowdown.misaligned"] = Metric(round(fig.misaligned_slowdown(raw), 3), "x")
    for ways in (2, 4, 8, 16, 32):
        out[f"bank_conflict_slowdown.{ways}way"] = Metric(round(fig.bank_slowdown(raw, ways), 2), "x")
    out["padded_speedup"] = Metric(round(fig.padded_speedup(raw), 2), "x")
    out["warps_per_sm_to_saturate"] = Metric(fig.warps_to_saturate(raw, "serial")[0], "warps")
    out["warps_per_sm_to_saturate.ilp4"] = Metric(fig.warps_to_saturate(raw, "unrolled4")[0], "warps")
    out["transpose_tiled_speedup"] = Metric(round(fig.transpose_speedup(raw, "padded"), 2), "x")
    out["transpose_gbs.padded"] = metric(raw["transpose"]["padded"]["gbs"], "GB/s", 1)
    out["divergence_slowdown"] = Metric(round(fig.divergence_slowdown(raw), 2), "x")
    return out


def _spread(entry: fig.Timed, key: Literal["gbs", "ms"] = "gbs", digits: int = 0) -> str:
    g = entry[key]
    return f"{g['median']:.{digits}f} [{g['min']:.{digits}f}-{g['max']:.{digits}f}]"


def dram_table(raw: Raw) -> Table:
    peak = fig.peak(raw)
    rows: list[tuple[Cell, ...]] = []
    for kind in fig.DRAM_KINDS:
        gbs = fig.dram_gbs(raw, kind)
        rows.append((LABELS[kind], _spread(raw["dram"][kind]), f"{gbs / peak['gbs']:.0%}" if peak else None))
    title = f"DRAM bandwidth over {format_bytes(int(raw['dram']['buffer_bytes']))} buffers, GB/s: median (min-max), CUDA events"
    return Table(title, ("case", "GB/s", "of peak"), tuple(rows))


def peak_table(raw: Raw) -> Table:
    interface = raw.get("memory_interface") or {}
    nv, cuda = interface.get("nvml") or {}, interface.get("cuda") or {}
    load = fig.state(raw, "state_under_load")
    peak = fig.peak(raw)
    rows: tuple[tuple[Cell, ...], ...] = (
        ("NVML max memory clock (MHz)", nv.get("mem_clock_max_mhz")),
        ("NVML memory clock under load (MHz)", load.get("mem_clock_mhz")),
        ("NVML memory bus width (bits)", nv.get("bus_width_bits")),
        ("CUDA memory clock (kHz) / bus width", f"{cuda.get('memory_clock_khz')} / {cuda.get('bus_width_bits')}"),
        ("peak = clock x 2 x width / 8 (GB/s)", round(peak["gbs"], 1) if peak else None),
        ("peak from", peak["source"] if peak else "unknown"))
    return Table("DRAM peak (theoretical)", ("what", "value"), rows)


def coalescing_table(raw: Raw) -> Table:
    rows: list[tuple[Cell, ...]] = []
    base = fig.stride_gbs(raw, 1)
    for entry in raw["coalescing"]["cases"]:
        label = f"stride {entry['stride']}" + (f", base +{int(entry['offset']) * 4} B" if int(entry["offset"]) else "")
        rows.append((label, _spread(entry), f"{base / float(entry['gbs']['median']):.2f}x"))
    return Table("Coalescing: useful read GB/s (elements asked for x 4 B) by stride between threads",
                 ("access", "GB/s", "slower than stride 1"), tuple(rows))


def shared_table(raw: Raw) -> Table:
    rows: list[tuple[Cell, ...]] = []
    base = fig.smem_ms(raw, 1)
    for entry in raw["shared"]["cases"]:
        stride = int(entry["stride"])
        label = "33 (padded [32][33] column)" if stride == 33 else f"{stride}" + (" ([32][32] column)" if stride == 32 else "")
        rows.append((label, _spread(entry), f"{float(entry['ms']['median']) / base:.2f}x"))
    return Table("Shared memory: load GB/s by word stride between lanes", ("stride (words)", "GB/s", "time vs stride 1"),
                 tuple(rows))


def occupancy_table(raw: Raw) -> Table:
    rows: list[tuple[Cell, ...]] = []
    for serial, ilp in zip(raw["occupancy"]["series"]["serial"], raw["occupancy"]["series"]["unrolled4"]):
        rows.append((serial["warps_per_sm"], f"{serial['block']} x {serial['blocks_per_sm']}",
                     _spread(serial), _spread(ilp)))
    return Table(f"Latency hiding: DRAM read GB/s over {format_bytes(int(raw['occupancy']['bytes']))} by resident warps per SM",
                 ("warps/SM", "threads x blocks per SM", "1 load in flight", "4 loads in flight"), tuple(rows))


def transpose_table(raw: Raw) -> Table:
    t = raw["transpose"]
    kinds: tuple[tuple[str, fig.TransposeKind], ...] = (("naive", "naive"), ("tiled [32][32]", "tiled"),
                                                        ("tiled [32][33]", "padded"))
    rows = tuple((label, _spread(t[k], "ms", 3), _spread(t[k]), f"{fig.transpose_speedup(raw, k):.2f}x")
                 for label, k in kinds)
    return Table(f"Transpose of a {t['n']}x{t['n']} float matrix (GB/s counts read + write)",
                 ("kernel", "ms", "GB/s", "speed-up"), rows)


def divergence_table(raw: Raw) -> Table:
    d = raw["divergence"]
    rows = (("paths by lane (divergent)", _spread(d["divergent"], "ms", 3)),
            ("paths by warp (split)", _spread(d["split"], "ms", 3)))
    return Table(f"Warp divergence: two equal {d['iters']}-step paths", ("kernel", "ms"), rows)


def state_table(raw: Raw) -> Table:
    rows: list[tuple[Cell, ...]] = []
    for label, key in STATES:
        state = fig.state(raw, key)
        pstate, reasons = state.get("pstate"), state.get("clock_event_reasons")
        rows.append((label, f"P{pstate}" if pstate is not None else None, state.get("sm_clock_mhz"),
                     state.get("mem_clock_mhz"),
                     f"0x{int(reasons):x} ({fig.reason_words(int(reasons))})" if reasons is not None else None))
    return Table("GPU state (NVML)", ("when", "perf state", "SM MHz", "memory MHz", "clock-event reasons"), tuple(rows))


def tables(raw: Raw, host: Facts) -> tuple[Table, ...]:
    return (dram_table(raw), peak_table(raw), coalescing_table(raw), shared_table(raw), occupancy_table(raw),
            transpose_table(raw), divergence_table(raw), state_table(raw))


def curves(raw: Raw) -> tuple[Curve, ...]:
    return tuple(Curve(title=f"DRAM read GB/s by resident warps per SM ({label})", x_label="warps per SM",
                       y_label="GB/s", points=tuple((float(w), g) for w, g in fig.occupancy_points(raw, series)))
                 for series, label in (("serial", "1 load in flight"), ("unrolled4", "4 loads in flight")))


def facts(raw: Raw, host: Facts) -> dict[str, Any]:
    device = raw.get("device") or {}
    return {"gpu": device.get("name"), "pci_bus_id": device.get("pci_bus_id"),
            "driver_version": device.get("driver_version"), "multiprocessors": device.get("multiprocessors"),
            "l2_bytes": device.get("l2_bytes"), "memory_interface": raw.get("memory_interface"),
            "peak": fig.peak(raw)}
