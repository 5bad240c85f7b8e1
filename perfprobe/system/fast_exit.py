"""Leaving a perfprobe process without the interpreter's teardown.

Why: with numba's compiled kernels loaded, CPython's finalisation (module and object teardown,
llvmlite's handles) took 0.22 s of every process on the 2-vCPU EPYC guest, 10 ms without it. That is
paid by every `perfprobe` run, every health check's measuring child and every ipc worker, while a
user or a Slurm prolog waits. What the process must still do on the way out it does here: flush its
standard streams and run the atexit handlers (logging's, the private numba cache's removal in
perfprobe/kernels/__init__.py). Files a run writes are closed when written; descriptors, mappings
and threads end with the process.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn


def exit_code(code: object) -> int:
    """SystemExit's code as the process's exit status: None is 0, an int itself, anything else is
    printed to stderr and exits 1 (as the interpreter does)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def watched() -> bool:
    """Whether a profiler, tracer or debugger watches this process: one set through sys.setprofile
    or sys.settrace, or a tool registered with sys.monitoring (Python 3.12+, where cProfile and
    coverage use it: sys.getprofile() stays None under `python3.12 -m cProfile -o`, and the fast
    exit lost its output on the H100 machine, 12-07 04:21 UTC)."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:
        return False
    return any(monitoring.get_tool(tool) is not None for tool in range(6))  # 0-5: the reserved tool ids


def leave(code: int) -> NoReturn:
    """Flush, run the atexit handlers, and end the process with `code`. Under a profiler or a
    tracer (cProfile -o, a debugger, coverage) the normal exit: they write what they saw after the
    program returns, which os._exit would skip."""
    if watched():
        raise SystemExit(code)
    atexit._run_exitfuncs()  # first, as the interpreter does: what a handler prints is flushed below
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started without that descriptor
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone (`| head`) or a closed stream: nothing to keep
            pass
    os._exit(code)
