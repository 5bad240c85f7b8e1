"""The command line and its commands: commands.py (the typer app, a command per registered probe),
help.py (plain --help), report_command.py (`perfprobe report`), warmup_command.py (`perfprobe
warmup`), completions.py (shell scripts).

`main` is the console script (`perfprobe = "perfprobe.cli:main"`) and `python -m perfprobe`. It
and `app` load commands.py when first used, not when the package is imported: fleet/commands.py
imports cli/help.py, and commands.py imports fleet/commands.py.
"""

from __future__ import annotations

from typing import Any


def main(argv: list[str] | None = None) -> None:
    """Run the CLI on `argv` (sys.argv when None)."""
    from perfprobe.cli.commands import main as run

    run(argv)


def __getattr__(name: str) -> Any:
    """`perfprobe.cli.app`: the typer app of commands.py."""
    if name == "app":
        from perfprobe.cli.commands import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
