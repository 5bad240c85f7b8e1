"""`perfprobe streams`: copy/compute overlap of an H2D -> kernel -> D2H pipeline across CUDA streams.

measure.py times each stage alone (H2D, the calibrated kernel, D2H, both copies at once), the serial
pipeline, then N chunks round-robin over K streams; every configuration's output is checked (the
serial one against the closed-form host reference, the others bit for bit against it). It also
times what breaks overlap (pageable host buffers, one kernel on the legacy default stream) and how
much host work hides behind GPU work. judge() is pure: rules.py and tables.py, both over figures.py.
"""

from __future__ import annotations

from perfprobe.host.facts import Facts
from perfprobe.model import Assessment
from perfprobe.probe import Gpu, Probe
from perfprobe.probes.streams import rules, tables
from perfprobe.probes.streams.figures import Raw
from perfprobe.probes.streams.plan import check_knobs


def judge(raw: Raw, host: Facts) -> Assessment:
    """The recorded numbers → findings, metrics and tables."""
    return Assessment(summary=tables.summary(raw), metrics=tables.metrics(raw),
                      findings=tuple(rules.findings(raw, host)), tables=tables.tables(raw),
                      facts=tables.facts(raw), key_figure=tables.key_figure(raw))


PROBE = Probe(name="streams", title="Copy/compute overlap across CUDA streams",
              judge=judge, measure_module="perfprobe.probes.streams.measure", requires=(Gpu(),),
              check_knobs=check_knobs)
