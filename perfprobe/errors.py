"""The exceptions every layer raises, in a leaf module that imports nothing from perfprobe.

Kept apart so that the kernel layer (kernels/cuda_runtime.py raises `GpuUnavailable`) and the
helpers (units.py, bind.py raise `UsageError`) need not import the engine (probe.py, config.py)
that imports them: no import cycle runs through an exception class.

- `ProbeSkipped`: this host cannot be measured; the probe's result is `skip` with reason and hint.
- `GpuUnavailable`: no usable GPU; `skip`, or `error` under --require-gpu.
- `UsageError`: bad usage or bad input; printed as one line, exit 2.
- `BindError`: `--bind` was set but did not verify; every probe `error`, exit 3.
"""

from __future__ import annotations


class ProbeSkipped(Exception):
    """Raised by `measure` when this host cannot be measured: the result is `skip` with the reason.

    `hint` says what would make it measurable (what to install, what to run), where one exists.
    """

    def __init__(self, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


class GpuUnavailable(ProbeSkipped):
    """No usable GPU (no cupy, no driver, no device): `skip`, or `error` under --require-gpu."""


class UsageError(Exception):
    """Bad usage or bad input: the CLI prints the message as one line and exits 2."""


class BindError(Exception):
    """The binding was set but did not verify (or could not be set): the run must not go on.

    Not a UsageError: the node was valid, the host failed to honour it. The runner measures
    nothing and reports every probe as `error` with this message (exit 3), so an ops script reading
    the exit code or the JSON sees a failed node check — never an unbound run passed off as bound."""
