"""The command line and its commands: commands.py (the typer app, a command per registered probe),
help.py (plain --help), report_command.py (`perfprobe report`), warmup_command.py (`perfprobe
warmup`), completions.py (shell scripts).

`console` is the console script (`perfprobe = "perfprobe.cli:console"`) and `python -m perfprobe`:
`main`, then the process ends without the interpreter's teardown (system/fast_exit.py). `main`
(what tests call) and `app` load commands.py when first used, not when the package is imported:
fleet/commands.py imports cli/help.py, and commands.py imports fleet/commands.py.
"""

from __future__ import annotations

from typing import Any


def main(argv: list[str] | None = None) -> None:
    """Run the CLI on `argv` (sys.argv when None)."""
    from perfprobe.cli.commands import main as run

    run(argv)


def console() -> None:
    """`main` on sys.argv, then leave with its exit code: 0.2 s sooner than a normal exit."""
    from perfprobe.system.fast_exit import exit_code, leave

    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exit_code(exc.code)
    leave(code)


def __getattr__(name: str) -> Any:
    """`perfprobe.cli.app`: the typer app of commands.py."""
    if name == "app":
        from perfprobe.cli.commands import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
