"""Every Slurm program perfprobe runs, in one place: srun for the fan-out, scontrol to drain,
resume and read a node's state. Commands are built by pure functions (tested) and run here."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from perfprobe.errors import UsageError

SCONTROL_TIMEOUT_S = 15


@dataclass(frozen=True)
class NodeState:
    name: str
    state: str            # "IDLE+DRAIN", "IDLE", "DOWN*", ...
    reason: str | None    # without the trailing " [user@time]"

    @property
    def drained(self) -> bool:
        return "DRAIN" in self.state


def srun_command(nodes: int, out_dir: Path, perfprobe_args: Sequence[str], partition: str | None = None,
                 python: str = sys.executable, extra: Sequence[str] = ()) -> list[str]:
    """One task per node; each writes its JSON report into OUT/<node>.json and its stderr into
    OUT/<node>.err (node_task.py), so reports are named by node and never interleave."""
    args = list(perfprobe_args)
    if "--json" not in args:
        args.append("--json")
    command = ["srun", f"--nodes={nodes}", "--ntasks-per-node=1", "--kill-on-bad-exit=0"]
    if partition:
        command.append(f"--partition={partition}")
    return command + list(extra) + [python, "-m", "perfprobe.fleet.node_task", str(out_dir), *args]


def drain_command(node: str, reason: str) -> list[str]:
    return ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]


def resume_command(node: str) -> list[str]:
    return ["scontrol", "update", f"NodeName={node}", "State=RESUME"]


def parse_node(text: str) -> NodeState | None:
    """`scontrol show node -o NAME` output → NodeState (None when it names no node)."""
    name = re.search(r"NodeName=(\S+)", text)
    state = re.search(r"\bState=(\S+)", text)
    if not name or not state:
        return None
    found = re.search(r"\bReason=(.*?)(?: \[[^\]]*\])?(?:\s+\w+=|\s*$)", text.strip())
    reason = found.group(1).strip() if found else None
    return NodeState(name.group(1), state.group(1), reason or None)


def node_state(node: str) -> NodeState:
    result = _run(["scontrol", "show", "node", "-o", node])
    state = parse_node(result.stdout)
    if result.returncode != 0 or state is None:
        raise UsageError(f"scontrol show node {node}: {_first_line(result.stderr) or 'no such node'}")
    return state


def drain(node: str, reason: str) -> None:
    _checked(drain_command(node, reason))


def resume(node: str) -> None:
    _checked(resume_command(node))


def run_srun(command: Sequence[str], timeout_s: float | None = None) -> int:
    """Run the fan-out (its own stdout and stderr pass through); srun's exit status."""
    if shutil.which(command[0]) is None:
        raise UsageError(f"{command[0]}: not found; run this on a Slurm login node (or install slurm-client)")
    try:
        return subprocess.run(list(command), timeout=timeout_s, stdin=subprocess.DEVNULL).returncode
    except subprocess.TimeoutExpired as exc:
        raise UsageError(f"srun: no answer within {timeout_s:.0f} s") from exc


def _checked(command: list[str]) -> None:
    result = _run(command)
    if result.returncode != 0:
        raise UsageError(f"{' '.join(command[:3])}: {_first_line(result.stderr) or f'exit {result.returncode}'}")


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    if shutil.which(command[0]) is None:
        raise UsageError(f"{command[0]}: not found; is this a Slurm node (slurm-client installed)?")
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=SCONTROL_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise UsageError(f"{' '.join(command[:3])}: no answer within {SCONTROL_TIMEOUT_S} s") from exc


def _first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""
