"""The ordered list of probes, by module path, imported only when a probe is run."""

from __future__ import annotations

import importlib

from perfprobe.probe import Probe

PROBE_MODULES: dict[str, str] = {
    "host": "perfprobe.probes.host",
    "cache": "perfprobe.probes.cache",
    "falseshare": "perfprobe.probes.falseshare",
    "numa": "perfprobe.probes.numa",
    "layout": "perfprobe.probes.layout",
    "branch": "perfprobe.probes.branch",
    "alloc": "perfprobe.probes.alloc",
    "ipc": "perfprobe.probes.ipc",
    "pinned": "perfprobe.probes.pinned",
    "streams": "perfprobe.probes.streams",
    "uvm": "perfprobe.probes.uvm",
    "gpumem": "perfprobe.probes.gpumem",
    "p2p": "perfprobe.probes.p2p",
}


def load_probe(name: str) -> Probe:
    """The Probe object of `name` (its module's PROBE)."""
    probe: Probe = importlib.import_module(PROBE_MODULES[name]).PROBE
    return probe


def all_probe_names() -> list[str]:
    """Every probe in the order `perfprobe all` runs them (host first)."""
    return list(PROBE_MODULES)
