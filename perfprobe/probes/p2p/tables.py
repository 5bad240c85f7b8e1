"""What `perfprobe p2p` shows: the matrices as metrics and tables, the topology, summary, facts.

The fraction table's cells are measured ÷ the links' rate, drawn with the renderers' "fraction"
heat: green at 83% of the rate or more, yellow to 62%, red below.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from perfprobe.engine.model import Cell, Curve, Metric, Table
from perfprobe.host.facts import Facts
from perfprobe.probes.p2p import figures as fig
from perfprobe.probes.p2p.figures import Raw
from perfprobe.pure.stats import metric
from perfprobe.pure.units import format_bytes


def _r(value: Optional[float], digits: int = 1) -> Optional[float]:
    return round(value, digits) if value is not None else None


def metrics(raw: Raw, host: Facts) -> dict[str, Metric]:
    """Per direction; the timed figures carry their repeats (stats.metric), the fraction of the
    links' rate those of the peer copy; peer access and the copy size stay plain."""
    out: dict[str, Metric] = {}
    for i, j in fig.directions(raw):
        key = f"{i}.{j}"
        out[f"p2p_gbs.{key}"] = metric(fig.peer_stat(raw, i, j), "GB/s", 1)
        out[f"p2p_bidir_gbs.{key}"] = metric(fig.bidir_stat(raw, i, j), "GB/s", 1)
        out[f"p2p_staged_gbs.{key}"] = metric(fig.staged_stat(raw, i, j), "GB/s", 1)
        out[f"p2p_latency_us.{key}"] = metric(fig.latency_stat(raw, i, j), "us", 2)
        out[f"peer_access.{key}"] = Metric(int(fig.peer_enabled(raw, i, j)), "bool")
        rate = fig.expected(raw, i, j)["gbs"]  # fig.fraction's: the peer copy over the links' rate
        out[f"p2p_fraction.{key}"] = (metric(fig.peer_stat(raw, i, j), "ratio", 3, scale=1 / rate)
                                      if rate else Metric(None, "ratio"))
    out["copy_bytes"] = Metric(int((raw.get("budget") or {}).get("top_bytes") or 0), "bytes")
    return out


def _matrix(raw: Raw, title: str, cell: Callable[[int, int], Cell], heat: str | None = None) -> Table:
    gpus = fig.selected(raw)
    measured = set(fig.directions(raw))
    rows = []
    for i in gpus:
        cells: list[Cell] = [f"GPU {i}"]
        cells += ["-" if i == j else cell(i, j) if (i, j) in measured else "not sampled" for j in gpus]
        rows.append(tuple(cells))
    columns = ("from \\ to",) + tuple(str(j) for j in gpus)
    return Table(title, columns, tuple(rows), heat=heat)


def _gbs_cell(raw: Raw, i: int, j: int) -> Cell:
    peer = fig.peer_gbs(raw, i, j)
    staged = fig.staged_gbs(raw, i, j)
    return _r(peer) if peer is not None else (f"{staged:.1f} staged" if staged is not None else None)


def _fraction_cell(raw: Raw, i: int, j: int) -> Cell:
    share = fig.fraction(raw, i, j)
    return round(share, 2) if share else "no peer" if not fig.peer_enabled(raw, i, j) else None


def tables(raw: Raw, host: Facts) -> tuple[Table, ...]:
    size = format_bytes(int((raw.get("budget") or {}).get("top_bytes") or 0))
    return (
        _matrix(raw, f"Peer GB/s one way, {size} (staged where no peer access)", lambda i, j: _gbs_cell(raw, i, j)),
        _matrix(raw, "Fraction of the links' rate, one way (1.0 = at the rate)", lambda i, j: _fraction_cell(raw, i, j),
                heat="fraction"),
        _matrix(raw, f"Both ways at once GB/s, {size} each way",
                lambda i, j: _r(fig.bidir_gbs(raw, i, j))),
        _matrix(raw, f"Staged (peer access off) GB/s one way, {size}",
                lambda i, j: _r(fig.staged_gbs(raw, i, j))),
        _matrix(raw, f"Latency µs, {raw.get('latency_bytes', 4)}-byte copy", lambda i, j: _r(fig.latency_us(raw, i, j) if fig.peer_enabled(raw, i, j)
                                                            else fig.latency_us(raw, i, j, staged=True), 2),
                heat="row"),
        topology_table(raw),
    )


def topology_table(raw: Raw) -> Table:
    rows: list[tuple[Cell, ...]] = []
    for i, j in fig.directions(raw):
        up, healthy, kind = fig.nvlink_links(raw, i, j)
        want = fig.expected(raw, i, j)
        status = fig.nvml_p2p(raw, i, j)
        rows.append((f"{i}→{j}", fig.can_access(raw, i, j), fig.peer_enabled(raw, i, j),
                     f"{up}/{healthy} {kind}" if healthy else "none", fig.pcie_path(raw, i, j),
                     fig.P2P_STATUS_WORDS.get(status, str(status)) if status is not None else None,
                     want["words"], _r(want["gbs"]), f"{fig.numa_node(raw, i)}/{fig.numa_node(raw, j)}"))
    return Table("Topology per direction (CUDA, NVML)",
                 ("pair", "peer possible", "peer on", "NVLink up/links", "PCIe path via", "NVML P2P read",
                  "links", "rate GB/s per direction", "NUMA nodes"), tuple(rows))


def curves(raw: Raw) -> tuple[Curve, ...]:
    out = []
    for i, j in fig.directions(raw)[:4]:  # a few directions: the matrices carry the rest
        sweep = fig.route(raw, i, j).get("sweep") or []
        if len(sweep) > 1:
            out.append(Curve(f"Peer copy GPU {i}→{j} GB/s by size", "copy size (bytes)", "GB/s",
                             tuple((float(s["bytes"]), float(s["gbs"]["median"])) for s in sweep)))
    return tuple(out)


def summary(raw: Raw, host: Facts) -> str:
    peer = [g for d in fig.directions(raw) if (g := fig.peer_gbs(raw, *d)) is not None]
    staged = [g for d in fig.directions(raw) if (g := fig.staged_gbs(raw, *d)) is not None]
    n = len(fig.selected(raw))
    head = f"{n} GPUs, {len(fig.pairs(raw))} pairs" + (" (sampled)" if raw.get("sampled") else "")
    if peer:
        return (f"{head}: peer copies {min(peer):.0f}-{max(peer):.0f} GB/s one way on {len(peer)} of "
                f"{len(fig.directions(raw))} directions; staged {min(staged, default=0):.1f}-{max(staged, default=0):.1f}")
    return f"{head}: no peer access; staged through host memory {min(staged, default=0):.1f}-{max(staged, default=0):.1f} GB/s"


def key_figure(raw: Raw, host: Facts) -> str:
    peer = [g for d in fig.directions(raw) if (g := fig.peer_gbs(raw, *d)) is not None]
    if peer:
        return f"{min(peer):.0f} GB/s worst peer pair"
    staged = [g for d in fig.directions(raw) if (g := fig.staged_gbs(raw, *d)) is not None]
    return f"no peer access, {min(staged, default=0):.1f} GB/s staged"


def facts(raw: Raw, host: Facts) -> dict[str, Any]:
    return {"gpus": [{k: d.get(k) for k in ("index", "name", "pci_bus_id", "compute_capability", "numa_node")}
                     for d in raw.get("devices") or []],
            "pairs": fig.pairs(raw), "sampled": bool(raw.get("sampled")),
            "nvml_error": (raw.get("topology") or {}).get("error")}
