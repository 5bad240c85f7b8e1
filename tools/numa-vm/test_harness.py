"""Self-tests of the host side of make test-numa-vm (no QEMU): shapes into QEMU options and
expectations, console parsing, exit decoding, and what counts as "as expected".

run.sh runs these first (under a second); `pytest tools/numa-vm` runs them by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from numa_vm import GuestRun, parse_console, qemu_command, settle_exit, table  # noqa: E402
from shapes import SHAPES, by_name, expected, kernel_args, qemu_args  # noqa: E402


def shape(name: str):
    return by_name([name])[0]


def test_every_shape_gives_qemu_a_distance_for_every_pair_and_memory_that_adds_up() -> None:
    for s in SHAPES:
        args = qemu_args(s)
        ids = [n.id for n in s.nodes]
        assert ids == list(range(len(ids))), "QEMU wants dense node ids"
        pairs = {(i, j) for i in ids for j in ids if i < j}
        assert set(s.distances) == pairs
        assert args[args.index("-m") + 1] == f"{sum(n.memory_mib for n in s.nodes)}M"
        assert sum(n.memory_mib for n in s.nodes) <= 2048, "memmap offsets assume RAM below 2 GiB"


def test_sparse_shape_hides_node_2_and_expects_ids_0_1_3() -> None:
    s = shape("sparse-ids")
    assert kernel_args(s) == "memmap=64M$1408M"
    want = expected(s)
    assert [n["id"] for n in want["nodes"]] == [0, 1, 3]
    assert want["distances"] == [[10, 21, 17], [21, 10, 28], [17, 28, 10]]
    assert want["memory_only_nodes"] == [3]


def test_negative_shape_sets_the_hook_on_the_kernel_command_line() -> None:
    command = qemu_command(shape("broken-membind"), Path("vmlinuz"), Path("initrd"))
    append = command[command.index("-append") + 1]
    assert "PERFPROBE_TEST_BREAK_MEMBIND=1" in append and "numavm_shape=broken-membind" in append
    assert "PERFPROBE_TEST_BREAK_MEMBIND" not in " ".join(qemu_command(shape("two-nodes"), Path("k"), Path("i")))


CONSOLE = ("\x1bc\x1b[?7l\x1b[2J\x00\x00@@numavm-guest {\"shape\":\"two-nodes\"}\r\n"
           "kernel noise\r\n"
           "@@numavm {\"check\":\"topology\",\"result\":\"pass\",\"detail\":\"ok\",\"seconds\":1.0}\r\n"
           "@@numavm-artifact {\"name\":\"host\",\"data\":{\"numa\":{}}}\r\n"
           "@@numavm {\"check\":\"numa-matrix\",\"result\":\"fail\",\"detail\":\"missing\",\"seconds\":2.0}\r\n"
           "@@numavm {truncated\r\n")


def test_console_lines_are_read_through_escape_codes_and_nul_bytes() -> None:
    run = GuestRun(shape("two-nodes"))
    parse_console(CONSOLE, run)
    assert [c["check"] for c in run.checks] == ["topology", "numa-matrix"]
    assert run.artifacts == {"host": {"numa": {}}} and run.info == {"shape": "two-nodes"}


def test_exit_codes_from_isa_debug_exit_and_crashes(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("Kernel panic\n")
    for code, guest, problem in ((1, 0, ""), (3, 1, ""), (0, None, "without a result")):
        run = GuestRun(shape("two-nodes"))
        settle_exit(code, run, log)
        assert run.guest_exit == guest and problem in run.problem


def test_positive_needs_every_check_passed_negative_every_check_failed() -> None:
    def finished(name: str, results: list[str]) -> GuestRun:
        run = GuestRun(shape(name), guest_exit=0 if set(results) == {"pass"} else 1)
        run.checks = [{"check": c, "result": r, "detail": "", "seconds": 1}
                      for c, r in zip(run.shape.checks, results)]
        return run

    two = len(shape("two-nodes").checks)
    assert finished("two-nodes", ["pass"] * two).ok()
    assert not finished("two-nodes", ["pass"] * (two - 1) + ["fail"]).ok()
    assert not finished("two-nodes", ["pass"] * (two - 1)).ok()  # a check that never reported
    assert finished("broken-membind", ["fail", "fail"]).ok()
    assert not finished("broken-membind", ["fail", "pass"]).ok()
    crashed = finished("broken-membind", ["fail", "fail"])
    crashed.problem = "timed out"
    assert not crashed.ok()
    exited_badly = finished("two-nodes", ["pass"] * two)
    exited_badly.guest_exit = 1  # checks.py died after its last report
    assert not exited_badly.ok()
    assert "fail (expected)" in table([finished("broken-membind", ["fail", "fail"])])
