"""The ordered list of probes: name -> package. Everything else about a probe is read from its package.

Two ways in, at two costs:
- `declaration(name)`: the package's declared.py (options, headline and key figures, docs page),
  loaded without running the package's __init__ (which imports its rules and tables) — the CLI
  builds its commands from these at every start, `perfprobe --help` included;
- `load_probe(name)`: the package's PROBE (judge, requirements), imported when a probe runs.

A probe outside perfprobe/ (a site's own, or a test's) is added the same way: its name and package
in PROBE_MODULES (tests/test_toy_probe.py does it with monkeypatch.setitem).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING

from perfprobe.engine.declaration import Declared

if TYPE_CHECKING:
    from perfprobe.engine.probe import Probe

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
DECLARED_MODULE = "declared"
"""The module of a probe package that holds DECLARED."""


def load_probe(name: str) -> Probe:
    """The Probe object of `name` (its package's PROBE)."""
    probe: Probe = importlib.import_module(PROBE_MODULES[name]).PROBE
    return probe


def all_probe_names() -> list[str]:
    """Every probe in the order `perfprobe all` runs them (host first)."""
    return list(PROBE_MODULES)


def declaration(name: str) -> Declared:
    """What probe `name` declares (its package's declared.DECLARED), its package left unimported."""
    declared = _leaf_module(f"{PROBE_MODULES[name]}.{DECLARED_MODULE}").DECLARED
    if not isinstance(declared, Declared) or declared.name != name:
        raise TypeError(f"{PROBE_MODULES[name]}.{DECLARED_MODULE}.DECLARED is not the Declared of {name!r}")
    return declared


def declarations() -> list[Declared]:
    """Every registered probe's declaration, in the registry's order."""
    return [declaration(name) for name in PROBE_MODULES]


def _leaf_module(name: str) -> ModuleType:
    """Import module `name` without running its package's __init__: the package is only located.

    Python runs a package's __init__ before any of its modules; a probe's __init__ imports its
    rules and tables (tens of milliseconds each, too slow for thirteen at every start). The module
    is entered in sys.modules under its full name, so the package's own later
    `from <package>.declared import DECLARED` finds this same module.
    """
    if name in sys.modules:
        return sys.modules[name]
    package, _, _leaf = name.rpartition(".")
    package_spec = importlib.util.find_spec(package)
    locations = package_spec.submodule_search_locations if package_spec is not None else None
    spec = importlib.machinery.PathFinder.find_spec(name, list(locations or ()))
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
