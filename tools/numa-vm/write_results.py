"""Turn the last `make test-numa-vm` run (.vm/results/) into docs/results/numa-vm.md.

Usage: python tools/numa-vm/write_results.py [--cache .vm] [--out docs/results/numa-vm.md]
Everything it writes comes from what the guests printed; the page says, first, that the figures
are emulated and mean nothing about real memory.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[2]
BANNER = """> **EMULATED — not a measurement of any real machine.** These guests run under QEMU's TCG
> emulator; every "node" is the same host RAM behind the same emulated memory path, so latency and
> bandwidth are equal on every node up to noise (a remote pair can even look faster than a local
> one), and their absolute values reflect emulation speed only. What these runs prove is
> behaviour on several nodes: node enumeration (ids, CPUs, memory, distances, memory-only and
> sparse nodes), `--bind` binding and its verification, page placement checked page by page,
> matrix shape, findings and exit codes."""


def host_line() -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    qemu = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True).stdout
    return (f"{model}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}; "
            f"{qemu.splitlines()[0] if qemu else 'QEMU'}, TCG, -cpu max")


def md_table(columns: list[Any], rows: list[list[Any]]) -> str:
    cell = lambda v: "-" if v is None else str(v)  # noqa: E731
    lines = ["| " + " | ".join(map(cell, columns)) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in rows]
    return "\n".join(lines)


def load(shape_dir: Path) -> dict[str, Any]:
    return {p.stem: json.loads(p.read_text()) for p in shape_dir.glob("*.json")}


def checks_table(runs: list[dict[str, Any]]) -> str:
    rows = []
    for run in runs:
        want = "fail" if run["expected"]["expect_fail"] else "pass"
        for check in run["checks"]:
            label = check["result"] + (" (expected)" if want == "fail" and check["result"] == "fail" else "")
            rows.append([run["shape"], check["check"], label, check["detail"].replace("|", "/")[:220]])
        rows.append([run["shape"], "(guest)", "as expected" if run["ok"] else "NOT as expected",
                     f"{run['seconds']} s"])
    return md_table(["shape", "check", "result", "detail"], rows)


def shape_section(data: dict[str, Any]) -> list[str]:
    run = data["run"]
    kernel = f"; kernel: `{run['kernel_args']}`" if run["kernel_args"] else ""
    out = [f"## {run['shape']}: {run['title']}", "", f"QEMU: `{' '.join(run['qemu_args'])}`{kernel}", ""]
    guest = run.get("info", {}).get("sysfs_nodes")
    if guest:
        out += [f"Guest kernel (sysfs): online nodes `{guest['online']}`, with CPUs `{guest['has_cpu']}`, "
                f"with memory `{guest['has_memory']}`.", ""]
    if "host" in data:
        numa = data["host"]["numa"]
        out += ["`perfprobe host --json`, `host.numa` (notes omitted):", "", "```json",
                json.dumps({k: numa[k] for k in ("nodes", "distances", "memory_only_nodes")}, indent=None),
                "```", ""]
    for name in sorted(k for k in data if k.startswith("numa")):
        out += numa_section(name, data[name])
    return out


def numa_section(name: str, result: dict[str, Any]) -> list[str]:
    command = "perfprobe numa --json --quick --size 16M"
    if name != "numa":
        command = command.replace("--json", f"--bind {name.rsplit('-', 1)[-1]} --json")
    out = [f"`{command}`: verdict **{result['verdict']}** — {result['summary']} (EMULATED figures)", ""]
    for table in result.get("tables") or []:
        if table["title"] in ("NUMA topology",):
            continue
        out += [f"*{table['title']}*", "", md_table(table["columns"], table["rows"]), ""]
    facts = result.get("facts") or {}
    pages = [[p["node"], p["checked"], p["on_node"], p.get("elsewhere") or "-", p.get("absent")]
             for p in facts.get("pages") or []]
    if pages:
        out += ["*Pages verified (move_pages)*", "",
                md_table(["memory node", "checked", "on node", "elsewhere", "absent"], pages), ""]
    if facts.get("binding"):
        out += [f"Binding record: `{json.dumps(facts['binding'])}`", ""]
    findings = [[f["verdict"], f["message"]] for f in result.get("findings") or []]
    if findings:
        out += ["*Findings*", "", md_table(["verdict", "message"], findings), ""]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=PROJECT / ".vm")
    parser.add_argument("--out", type=Path, default=PROJECT / "docs" / "results" / "numa-vm.md")
    args = parser.parse_args()
    from shapes import SHAPES  # the shapes' order

    results = args.cache / "results"
    dirs = [results / s.name for s in SHAPES if (results / s.name / "run.json").exists()]
    shapes = [load(d) for d in dirs]
    kernel = (args.cache / "kernel" / "package").read_text().strip()
    when = datetime.fromtimestamp(max((d / "run.json").stat().st_mtime for d in dirs), timezone.utc)
    lines = ["# perfprobe on emulated multi-node NUMA guests (`make test-numa-vm`)", "", BANNER, "",
             f"Run {when:%Y-%m-%d %H:%M} UTC on {host_line()}; guest kernel {kernel}. "
             "How the guests are built and what each check does: docs/probes/numa-vm.md.", "",
             "## Checks", "", checks_table([s["run"] for s in shapes]), ""]
    for data in shapes:
        lines += shape_section(data)
    args.out.write_text("\n".join(lines).rstrip() + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
