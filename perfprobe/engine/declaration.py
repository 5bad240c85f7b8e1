"""What a probe declares about itself, read without running it: its command and options, the figures
the fleet view heads with, the figures `compare` judges, its docs page.

Each probe package holds one `declared.py` with `DECLARED = Declared(...)`; the registry loads it
without importing the rest of the package, so `perfprobe --help` reads every probe's options in a
few milliseconds. Light on purpose: this module imports only units.py (which imports errors.py).
The CLI (cli/commands.py) turns the options into typer options, the fleet (fleet/metrics.py,
render/html_fleet.py) reads the figures, tools/readme_rules.py the docs page.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from perfprobe.errors import UsageError
from perfprobe.pure.units import parse_count, parse_size, size_word

Kind = Literal["bytes", "count", "files", "dir"]
"""bytes: a size as typed (64K, 1G), an int; count: an int; files: a repeatable path, a tuple of
str (None when absent); dir: a folder, a Path."""
METAVARS: dict[str, str] = {"bytes": "BYTES", "count": "N", "files": "FILE", "dir": "DIR"}
MAX_BYTES = 1 << 50
"""The largest size any option takes (1P), as parse_size's own ceiling."""


@dataclass(frozen=True)
class ProbeOption:
    """One command-line option of a probe. `help` may name `{minimum}` and `{maximum}`: they are
    filled in as the user would type them (64K, 1M), so the range is written once, here.

    `field` is where the value goes: the Knobs field of that name (config.py), or with
    `into="run"` the RunConfig field (host's --fsroot). Ranges are checked in code, one line and
    exit 2, before anything runs (parse); `check` says the same of a value set from Python."""

    flag: str
    kind: Kind
    help: str
    field: str = ""
    minimum: int = 1
    maximum: int | None = None
    power_of_two: bool = False
    default: None = None
    """Always None: an option left out means "the probe's preset decides"."""
    into: Literal["knobs", "run"] = "knobs"

    @property
    def name(self) -> str:
        """The field the value lands in: `field`, else the flag without dashes ('--max-size' -> 'max_size')."""
        return self.field or self.flag.lstrip("-").replace("-", "_")

    @property
    def metavar(self) -> str:
        return METAVARS[self.kind]

    @property
    def ceiling(self) -> int:
        return self.maximum if self.maximum is not None else MAX_BYTES

    def shown(self, value: int) -> str:
        """`value` as the user would type it: a size word (64K, 1M) for a bytes option, else digits."""
        return size_word(value) if self.kind == "bytes" else str(value)

    @property
    def help_text(self) -> str:
        return self.help.format(minimum=self.shown(self.minimum), maximum=self.shown(self.ceiling))

    def parse(self, value: object) -> object:
        """What the user typed (as typer hands it over) -> the value for Knobs or RunConfig."""
        if value is None:
            return None
        if self.kind == "bytes":
            return parse_size(str(value), self.flag, minimum=self.minimum, maximum=self.ceiling,
                              power_of_two=self.power_of_two)
        if self.kind == "count":
            return parse_count(int(str(value)), self.flag, self.minimum, self.ceiling)
        if self.kind == "files":
            paths = value if isinstance(value, (list, tuple)) else (value,)
            return tuple(str(path) for path in paths) or None
        return Path(str(value))

    def check(self, value: int | None) -> None:
        """A value set from Python (RunConfig in tests, plan.check_knobs): UsageError when out of range."""
        if value is None or self.kind not in ("bytes", "count"):
            return
        if value < self.minimum:
            raise UsageError(f"{self.flag} {value!r}: must be at least {self.shown(self.minimum)}")
        if value > self.ceiling:
            raise UsageError(f"{self.flag} {value!r}: must be at most {self.shown(self.ceiling)}")
        if self.power_of_two and value & (value - 1):
            raise UsageError(f"{self.flag} {value!r}: must be a power of two (e.g. 256, 512, 1K)")


@dataclass(frozen=True)
class Declared:
    """Everything about a probe that is read without running it.

    - `help`: the command's help; its first sentence is its line in `perfprobe --help`.
    - `options`: its own options, after the common ones (--json, -o, --quick, --bind, ...).
    - `gpu`: it takes --device and --require-gpu (its Probe has a Gpu() requirement; a test checks).
    - `timed`: it takes --quick and --bind (host reads facts and times nothing: False).
    - `headline`: metric names heading the HTML fleet view, in order.
    - `key_figures`: metric patterns (fnmatch, without "probe:") `compare` judges by default,
      `fleet` looks for outliers in and the health check drains on; () for none; None (not
      declared) takes every rate and timing of the probe.
    - `docs`: its page (method, metric names, a "## Verdict rules" table the README gathers).
    - `quick_budget_s`: the seconds its `--quick` run should take on a warm numba cache, per GPU
      for a GPU probe: what it took on the slowest host measured, with headroom (its declared.py
      names the host). Stated, not enforced: the plan decides the time, so its figures keep their
      noise; a `--quick` run past the sum of its probes' budgets says where the time went
      (engine/quick_budget.py). None (a probe outside perfprobe/ that declares none): no budget.
    """

    name: str
    help: str
    options: tuple[ProbeOption, ...] = ()
    gpu: bool = False
    timed: bool = True
    headline: tuple[str, ...] = ()
    key_figures: tuple[str, ...] | None = None
    docs: str = ""
    quick_budget_s: float | None = None

    @property
    def docs_page(self) -> str:
        """The docs page, relative to the checkout: `docs`, else docs/probes/<name>.md."""
        return self.docs or f"docs/probes/{self.name}.md"

    def option(self, name: str) -> ProbeOption:
        """The option whose value lands in field `name` (KeyError if none)."""
        for option in self.options:
            if option.name == name:
                return option
        raise KeyError(f"{self.name} declares no option {name!r}")
