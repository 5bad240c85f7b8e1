"""The committed completion scripts are the ones the CLI generates today."""

from pathlib import Path

from perfprobe.cli import completions

FOLDER = Path(__file__).resolve().parents[1] / "completions"


def test_committed_completions_are_fresh(tmp_path):
    completions.write_all(tmp_path)
    for filename in completions.SHELLS.values():
        assert (tmp_path / filename).read_text() == (FOLDER / filename).read_text(), (
            f"completions/{filename} is stale: run `make completions`")


def test_every_command_and_shared_option_is_completed():
    table = completions.command_options()
    assert {"host", "all", "cache", "falseshare", "numa", "pinned", "streams", "uvm"} <= set(table)
    for name in ("cache", "numa", "pinned", "all"):
        options = {option for option, _ in table[name]}
        assert {"--json", "--output", "--quick", "--bind"} <= options
    assert "--record" not in {option for option, _ in table["cache"]}  # hidden options stay hidden
