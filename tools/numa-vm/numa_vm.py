"""make test-numa-vm, host side: build the initrd, boot each shape's guest under QEMU (TCG), read
the checks' results off the serial console, print shape | check | result, and exit 0 only when
every positive shape passed and every negative shape failed the way it should.

Usage: numa_vm.py --cache .vm [--shape NAME ...] [--timeout S]. Console logs and the reports the
guests printed are kept under CACHE/logs and CACHE/results (write_results.py turns them into
docs/results/numa-vm.md).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator

import initrd
from shapes import Shape, by_name, expected, kernel_args, qemu_args

PROJECT = Path(__file__).resolve().parents[2]
# maxcpus=1 + initramfs_async=0: the rootfs is unpacked on CPU 0, so it fills node 0 only (the other
# nodes keep their memory free for the checks); /init brings the other CPUs online.
KERNEL_CMDLINE = "console=ttyS0 quiet loglevel=1 panic=-1 initramfs_async=0 maxcpus=1"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1bc")


@dataclass
class GuestRun:
    """What one guest said: its checks' results, its reports, and how QEMU ended."""

    shape: Shape
    checks: list[dict] = field(default_factory=list)
    artifacts: dict[str, dict] = field(default_factory=dict)
    guest_exit: int | None = None  # the checks' exit status, from isa-debug-exit
    problem: str = ""  # why the guest did not finish (timeout, panic, QEMU error)
    seconds: float = 0.0
    info: dict = field(default_factory=dict)

    def ok(self) -> bool:
        """Positive shapes: finished, every check passed, guest exit 0. Negative: finished, every
        check failed, guest exit 1 (so a crash never counts as the expected failure)."""
        if self.problem or len(self.checks) != len(self.shape.checks):
            return False
        results = {c["result"] for c in self.checks}
        if self.shape.expect_fail:
            return results == {"fail"} and self.guest_exit == 1
        return results == {"pass"} and self.guest_exit == 0


def qemu_command(shape: Shape, kernel: Path, initrd_path: Path) -> list[str]:
    """The QEMU command line of one guest (TCG: KVM hangs on this machine kind, see the docs)."""
    env = [f"{name}={value}" for name, value in shape.guest_env.items()]  # init's environment
    append = " ".join(filter(None, [KERNEL_CMDLINE, kernel_args(shape), f"numavm_shape={shape.name}",
                                    *env]))
    return ["qemu-system-x86_64", "-machine", "q35", "-accel", "tcg,thread=multi", "-cpu", "max",
            *qemu_args(shape), "-kernel", str(kernel), "-initrd", str(initrd_path),
            "-append", append, "-nographic", "-no-reboot", "-nodefaults", "-serial", "stdio",
            "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]


def boot(shape: Shape, kernel: Path, initrd_path: Path, logs: Path, timeout: float) -> GuestRun:
    """Run one guest to the end (or the timeout) and parse its console."""
    run = GuestRun(shape)
    log = logs / f"{shape.name}.log"
    started = time.monotonic()
    with log.open("w") as sink:
        proc = subprocess.Popen(qemu_command(shape, kernel, initrd_path), stdin=subprocess.DEVNULL,
                                stdout=sink, stderr=subprocess.STDOUT)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = None
            run.problem = f"timed out after {timeout:.0f} s"
    run.seconds = time.monotonic() - started
    parse_console(log.read_text(errors="replace"), run)
    if code is not None:
        settle_exit(code, run, log)
    return run


def settle_exit(code: int, run: GuestRun, log: Path) -> None:
    """QEMU exits (c << 1) | 1 when the guest wrote c to isa-debug-exit; anything else is a crash."""
    if code & 1:
        run.guest_exit = code >> 1
    else:
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
        run.problem = f"QEMU exited {code} without a result from the guest: {tail[-300:]}"


def parse_console(text: str, run: GuestRun) -> None:
    """Collect the guest's `@@numavm*` lines (through escape codes and stray NUL bytes)."""
    for raw in text.splitlines():
        line = ANSI.sub("", raw).replace("\x00", "").strip()
        at = line.find("@@numavm")
        if at < 0:
            continue
        tag, _, payload = line[at:].partition(" ")
        try:
            data = json.loads(payload) if payload.startswith("{") else None
        except ValueError:
            data = None
        if tag == "@@numavm" and data:
            run.checks.append(data)
        elif tag == "@@numavm-artifact" and data:
            run.artifacts[data["name"]] = data["data"]
        elif tag == "@@numavm-guest" and data:
            run.info = data


def save(run: GuestRun, results: Path) -> None:
    """Keep the guest's reports and results for docs/results/numa-vm.md."""
    out = results / run.shape.name
    out.mkdir(parents=True, exist_ok=True)
    summary = {"shape": run.shape.name, "title": run.shape.title, "expected": expected(run.shape),
               "qemu_args": qemu_args(run.shape), "kernel_args": kernel_args(run.shape),
               "checks": run.checks, "guest_exit": run.guest_exit, "problem": run.problem,
               "seconds": round(run.seconds, 1), "info": run.info, "ok": run.ok()}
    (out / "run.json").write_text(json.dumps(summary, indent=1))
    for name, data in run.artifacts.items():
        (out / f"{name}.json").write_text(json.dumps(data, indent=1))


def table(runs: list[GuestRun]) -> str:
    """shape | check | result | detail — the detail only where something went other than expected."""
    rows = [("shape", "check", "result", "detail")]
    for run in runs:
        rows += guest_rows(run)
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(" | ".join([*(r[i].ljust(widths[i]) for i in range(3)), r[3]]) for r in rows)


def guest_rows(run: GuestRun) -> list[tuple[str, str, str, str]]:
    """One row per check (ran or not), then the guest's own verdict."""
    want = "fail" if run.shape.expect_fail else "pass"
    rows = []
    for check in run.checks:
        label = check["result"] + (" (expected)" if want == "fail" and check["result"] == "fail" else "")
        detail = f"{check['seconds']} s" if check["result"] == want else check["detail"][:160]
        rows.append((run.shape.name, check["check"], label, detail))
    ran = {c["check"] for c in run.checks}
    rows += [(run.shape.name, name, "not run", run.problem or "guest ended early")
             for name in run.shape.checks if name not in ran]
    ending = f"{run.seconds:.0f} s" + (f"; {run.problem}" if run.problem else "")
    rows.append((run.shape.name, "(guest)", "PASS" if run.ok() else "FAIL", ending))
    return rows


def shapes_json(shapes: list[Shape], cache: Path) -> str:
    return json.dumps({"project": str(PROJECT), "numba_cache_dir": str(cache / "numba-cache"),
                       "shapes": {s.name: expected(s) for s in shapes}})


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """One run per checkout at a time: runs share .vm/ (the initrd, logs, numba's cache)."""
    with path.open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("numa-vm: another run is using this checkout's .vm/; waiting for it", file=sys.stderr)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def run_all(shapes: list[Shape], cache: Path, kernel: Path, timeout: float, started: float) -> int:
    """Build the initrd, boot every shape in turn, print the table; 0 when all went as expected."""
    initrd_path = initrd.build_initrd(cache, PROJECT, shapes_json(shapes, cache))
    logs, results = cache / "logs", cache / "results"
    logs.mkdir(parents=True, exist_ok=True)
    runs = []
    for shape in shapes:
        print(f"numa-vm: booting {shape.name}: {shape.title}", file=sys.stderr, flush=True)
        run = boot(shape, kernel, initrd_path, logs, timeout)
        save(run, results)
        runs.append(run)
    print(table(runs))
    ok = all(r.ok() for r in runs)
    passed = sum(r.ok() for r in runs)
    print(f"numa-vm: {'all guests as expected' if ok else 'NOT as expected'} in "
          f"{time.monotonic() - started:.0f} s (console logs: {logs})")
    print(f"numa-vm: {passed} passed, {len(runs) - passed} failed")
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=PROJECT / ".vm")
    parser.add_argument("--shape", action="append", default=[], help="run only these shapes")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per guest")
    parser.add_argument("--checks", default="", help="comma-separated checks to run instead (debugging)")
    args = parser.parse_args(argv)
    try:
        shapes = by_name(args.shape)
        if args.checks:
            shapes = [replace(s, checks=tuple(args.checks.split(","))) for s in shapes]
    except ValueError as exc:
        print(f"numa-vm: {exc}", file=sys.stderr)
        return 2
    cache = args.cache.resolve()
    kernel = cache / "kernel" / "vmlinuz"
    if not kernel.exists():
        print(f"numa-vm: no guest kernel at {kernel} (tools/numa-vm/run.sh fetches it)", file=sys.stderr)
        return 2
    started = time.monotonic()
    cache.mkdir(parents=True, exist_ok=True)
    with exclusive(cache / ".lock"):
        return run_all(shapes, cache, kernel, args.timeout, started)


if __name__ == "__main__":
    os.chdir(PROJECT)
    sys.exit(main(sys.argv[1:]))
