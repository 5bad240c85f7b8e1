"""JUnit XML for CI test views (GitLab, Jenkins, GitHub): one test case per probe and device.

`warn` and `error` are failures carrying each finding's message and advice; `skip` is skipped with
its reason; `pass` passes. The suite is named after the host so that reports of many runners sit
side by side. A probe's unstable figures (left out of its verdict) are listed in its system-out, one
line each with the value and why, so a CI view shows what was not judged.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from perfprobe.engine.model import ProbeResult, Report, Verdict, host_name
from perfprobe.render import unstable_figures


def document(report: Report) -> ET.ElementTree:
    host = host_name(report.host) or "host"
    cases = [_case(r, host) for r in report.results]
    counts = {v: sum(1 for r in report.results if r.verdict is v) for v in Verdict}
    suite = ET.Element("testsuite", name=f"perfprobe on {host}", tests=str(len(cases)),
                       failures=str(counts[Verdict.WARN] + counts[Verdict.ERROR]), errors="0",
                       skipped=str(counts[Verdict.SKIP]), time=f"{report.duration_s:.3f}",
                       hostname=host, timestamp=str(report.host.get("time_utc") or ""))
    suite.extend(cases)
    root = ET.Element("testsuites", name="perfprobe", tests=str(len(cases)),
                      failures=suite.get("failures", "0"), skipped=suite.get("skipped", "0"))
    root.append(suite)
    ET.indent(root)
    return ET.ElementTree(root)


def write(report: Report, path: Path) -> None:
    document(report).write(path, encoding="utf-8", xml_declaration=True)


def _case(result: ProbeResult, host: str) -> ET.Element:
    name = result.probe if result.device is None else f"{result.probe}[{result.device}]"
    case = ET.Element("testcase", name=name, classname=f"perfprobe.{result.probe}", time=f"{result.duration_s:.3f}")
    if result.verdict in (Verdict.WARN, Verdict.ERROR):
        bad = [f for f in result.findings if f.verdict in (Verdict.WARN, Verdict.ERROR)]
        first = bad[0].message if bad else result.summary
        failure = ET.SubElement(case, "failure", message=f"{result.verdict.value}: {first}", type=result.verdict.value)
        failure.text = "\n".join(f"[{f.verdict.value}] {f.message}" + (f"\n  advice: {f.advice}" if f.advice else "")
                                 for f in bad) or result.summary
    elif result.verdict is Verdict.SKIP:
        ET.SubElement(case, "skipped", message=result.summary)
    out = ET.SubElement(case, "system-out")
    out.text = f"{result.summary}" + (f" ({result.key_figure})" if result.key_figure else "") + f" on {host}"
    unstable = [(name, m) for _, name, m in unstable_figures((result,))]
    if unstable:
        out.text += "\n" + "\n".join([f"unstable, left out of judgement ({len(unstable)}):"] + [
            f"  {name} = {m.value} {m.unit}".rstrip() + f" — {m.unstable}" for name, m in unstable])
    return case
