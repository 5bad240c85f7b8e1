"""`perfprobe p2p`: GPU-to-GPU copies over NVLink or PCIe, as matrices judged against the topology.

One measurement over all selected GPUs (the probe is `per_device=False`: `--device all` by default,
or a list `--device 0,1`): for every ordered pair, whether CUDA allows peer access, peer copy
bandwidth one way and both ways at once with peer access on and staged through host memory with it
off, small-copy latency; and NVML's NVLink links and PCIe path between them. measure.py drives
perfprobe/kernels/p2p_kernels.py; judge() is pure: rules.py's findings and tables.py's figures,
both read from figures.py.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.engine.model import Assessment
from perfprobe.engine.probe import Gpu, Probe
from perfprobe.engine.stability import AtMost, Relation
from perfprobe.host.facts import Facts
from perfprobe.probes.p2p import rules, tables
from perfprobe.probes.p2p.declared import DECLARED
from perfprobe.probes.p2p.figures import typed
from perfprobe.probes.p2p.plan import check_knobs

RELATIONS: tuple[Relation, ...] = (
    AtMost("p2p_fraction.*", 1.0, "a peer copy faster than its links' raw rate (the links read, or the "
           "timing, are wrong)"),
)


def judge(recorded: Mapping[str, Any], host: Facts) -> Assessment:
    """The recorded matrices and host facts → findings, metrics, tables and curves."""
    raw = typed(recorded)
    return Assessment(summary=tables.summary(raw, host), metrics=tables.metrics(raw, host),
                      findings=tuple(rules.findings(raw, host)), tables=tables.tables(raw, host),
                      curves=tables.curves(raw), facts=tables.facts(raw, host),
                      key_figure=tables.key_figure(raw, host))


PROBE = Probe(name=DECLARED.name, title="GPU-to-GPU copies over NVLink or PCIe, against the topology",
              judge=judge, measure_module="perfprobe.probes.p2p.measure", requires=(Gpu(),),
              check_knobs=check_knobs, per_device=False, relations=RELATIONS)
