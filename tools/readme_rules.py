"""Gather each probe's verdict-rule table (its docs page) into the README's rules section.

The probes and their pages come from the registry (each probe's declared.py names its page); the
pages are the source; `make readme` rewrites the README between its rules markers and
tests/test_readme.py fails when the README lags behind them.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from a checkout: perfprobe is the checkout's

from perfprobe.engine.registry import declarations  # noqa: E402

BEGIN, END = "<!-- rules:begin -->", "<!-- rules:end -->"
INTRO = """## Verdict rules

Every rule is a plain function of measured numbers and host facts, unit-tested on numbers recorded
on real hosts (tests/data/). Each probe's page under docs/probes/ gives its method, metric names
and measured figures in full; the tables below are gathered from those pages by `make readme`.
"""


def rule_table(page: str) -> list[str]:
    """The first markdown table under the page's '## Verdict rules' heading."""
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## Verdict rules"))
    table: list[str] = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            table.append(line)
        elif table or line.startswith("## "):
            break
    return table


def rules_section() -> str:
    parts = [BEGIN, INTRO]
    for declared in declarations():
        name, path = declared.name, declared.docs_page
        page = (ROOT / path).read_text()
        parts.append(f"### {name} ([{path}]({path}))\n")
        parts.append("\n".join(rule_table(page)) + "\n")
    parts.append(END)
    return "\n".join(parts)


def updated_readme(readme: str) -> str:
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + rules_section() + tail


if __name__ == "__main__":
    path = ROOT / "README.md"
    path.write_text(updated_readme(path.read_text()))
    sys.stdout.write("README.md: verdict rules gathered from docs/probes/\n")
