"""The README's usage section stays true to the CLI: every command and every visible option is there."""

import re
from pathlib import Path

from perfprobe.cli import completions

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
USAGE = README.split("<!-- usage:begin -->")[1].split("<!-- usage:end -->")[0]


def test_every_command_is_in_the_readme():
    for command in completions.command_options():
        if command:
            assert f"`perfprobe {command}`" in USAGE, f"README lacks the command {command}"


def test_every_visible_option_is_in_the_readme():
    documented = set(re.findall(r"`(--[a-z-]+)", USAGE))
    for command, options in completions.command_options().items():
        for option, _help in options:
            if option != "--help":
                assert option in documented, f"README lacks {option} (of {command or 'perfprobe'})"


def test_every_option_of_a_subcommand_group_is_in_the_readme():
    """`fleet show` and `fleet run` are not in completions' table: walk the groups themselves."""
    import typer

    from perfprobe.cli import app

    documented = set(re.findall(r"`(--[a-z-]+)", USAGE))
    groups = [c for c in typer.main.get_group(app).commands.values() if hasattr(c, "commands")]
    assert groups, "no command group found (fleet is one)"
    for group in groups:
        for name, command in group.commands.items():
            assert f"{group.name} {name}" in USAGE or name == "show", f"README lacks `{group.name} {name}`"
            for param in command.params:
                for option in param.opts:
                    if option.startswith("--") and option != "--help" and not getattr(param, "hidden", False):
                        assert option in documented, f"README lacks {option} (of {group.name} {name})"


def test_readme_starts_with_the_two_setup_commands():
    setup = README.split("## Set-up")[1][:400]
    assert "make run" in setup and "make test" in setup


def test_readme_rules_are_gathered_from_the_probe_pages():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "tools" / "readme_rules.py"
    spec = importlib.util.spec_from_file_location("readme_rules", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.updated_readme(README) == README, "README's verdict rules are stale: run `make readme`"
