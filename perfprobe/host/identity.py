"""Whose report this is: the host's name, the Slurm node name when one is set, and the run's time.

A fleet of reports is identified by content, not by file names: `fleet` and `healthcheck` read
these keys. A captured tree names its host from proc/sys/kernel/hostname (never this host's name);
the Slurm node name comes only from the environment of a live run.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timezone
from typing import Mapping

from perfprobe.host.sysroot import SysRoot

SLURM_NODE_VARIABLES = ("SLURMD_NODENAME", "SLURM_NODENAME")


def host_identity(sr: SysRoot, environ: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """{"hostname", "slurm_node"}: socket.gethostname() live, the tree's hostname file under --fsroot."""
    if not sr.live:
        return {"hostname": _tree_hostname(sr), "slurm_node": None}
    env = os.environ if environ is None else environ
    return {"hostname": socket.gethostname() or None, "slurm_node": slurm_node_name(env)}


def slurm_node_name(environ: Mapping[str, str]) -> str | None:
    """The node name slurmd gave this process (health checks, prologs and job steps all get one)."""
    for variable in SLURM_NODE_VARIABLES:
        value = environ.get(variable, "").strip()
        if value:
            return value
    return None


def run_time_utc(now: datetime | None = None) -> str:
    """The run's start as UTC ISO 8601 with a Z, to the second: '2025-01-31T12:00:00Z'."""
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _tree_hostname(sr: SysRoot) -> str | None:
    return sr.read_text("proc/sys/kernel/hostname") or None


def stamped(host: Mapping[str, object], keep_recorded: bool = False) -> dict[str, object]:
    """`host` with the run's `time_utc` (a replayed recording keeps the time it was recorded at)."""
    if keep_recorded and host.get("time_utc"):
        return dict(host)
    return {**host, "time_utc": run_time_utc()}
