"""Commands whose positional arguments read hand-written in --help (issue 14 item 7).

typer appends its own marks to an argument's help line — the type (`<path>`, `<list[Path]>`, even
with a metavar) and `[required]` — and wraps required ones in braces on the usage line, and its
Argument() takes no class to change that. `app.command(cls=PlainArgsCommand)` gives the command's
arguments `PlainArgument`'s drawing: the metavar and the help text alone; the help says what is needed.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperCommand


class PlainArgument(TyperArgument):
    """Drawn as `METAVAR  help` in --help and `METAVAR` (`[METAVAR]` when optional) in the usage line."""

    def get_help_record(self, ctx: Any) -> tuple[str, str] | None:
        return None if self.hidden else (self.display_name_raw, self.help or "")

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        return [self.display_name_raw if self.required else f"[{self.display_name_raw}]"]


class PlainArgsCommand(TyperCommand):
    """A typer command whose arguments are PlainArguments (options are untouched: give them metavars)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if type(param) is TyperArgument:
                param.__class__ = PlainArgument
