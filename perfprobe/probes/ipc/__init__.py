"""`perfprobe ipc`: what a message between a scheduler and its worker costs, per transport.

measure.py starts a worker process (worker.py, through session.py, which cleans up on every path)
and times ping-pong round trips and one-way streams over Unix sockets (stream, seqpacket), a pipe,
loopback TCP and a shared-memory ring (spinning, futex, eventfd), on every CPU placement possible
here, then the same ping-pong through a Python event loop. rules.py and tables.py judge (pure).
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.host.facts import Facts
from perfprobe.model import Assessment
from perfprobe.probe import Probe, PythonModule
from perfprobe.probes.ipc import rules, tables


def judge(raw: Mapping[str, Any], host: Facts) -> Assessment:
    """Findings, metrics, tables and curves from the recorded numbers."""
    return Assessment(summary=tables.summary(raw, host), metrics=tables.metrics(raw, host),
                      findings=rules.findings(raw, host), tables=tables.tables(raw),
                      curves=tables.curves(raw), facts=tables.facts(raw), key_figure=tables.key_figure(raw, host))


PROBE = Probe(name="ipc", title="IPC: sockets, pipes and a shared-memory ring between two processes",
              judge=judge, measure_module="perfprobe.probes.ipc.measure",
              requires=(PythonModule("numba", "pip install numba"),))
