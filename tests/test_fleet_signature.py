"""Which hosts are peers (fleet/signature.py): the last-level cache's size is part of what the
hardware is, and a baseline written before it was has its groups still matched."""

from __future__ import annotations

from typing import Any

from perfprobe.fleet.signature import differences, label, same_hardware, signature


def _host(llc_mib: int | None) -> dict[str, Any]:
    caches = [{"level": 1, "type": "Data", "size_bytes": 48 << 10},
              {"level": 2, "type": "Unified", "size_bytes": 2 << 20}]
    if llc_mib is not None:
        caches.append({"level": 3, "type": "Unified", "size_bytes": llc_mib << 20})
    return {"cpu": {"model": "Intel(R) Xeon(R) Processor"}, "cpus": {"online": list(range(16)), "offline": []},
            "memory": {"total_bytes": 128 << 30}, "gpus": [], "caches": caches}


def test_two_guests_of_one_generic_cpu_name_and_different_llcs_are_not_peers() -> None:
    """The H100 machines' 16-vCPU guests of 2026-12-06: 105 and 300 MiB L3, 190 and 122 GB/s."""
    a, b = signature(_host(105)), signature(_host(300))
    assert a["llc_mib"] == 105 and b["llc_mib"] == 300
    assert not same_hardware(a, b) and differences(a, b) == ["llc_mib: 105 vs 300"]
    assert "16 CPUs (105 MiB LLC)" in label(a)


def test_the_llc_is_the_highest_level_reported_and_none_without_caches() -> None:
    assert signature(_host(None))["llc_mib"] == 2
    assert signature({**_host(None), "caches": []})["llc_mib"] is None
    assert signature({})["llc_mib"] is None


def test_a_baseline_group_written_without_the_llc_still_matches() -> None:
    old = {k: v for k, v in signature(_host(105)).items() if k != "llc_mib"}
    assert same_hardware(old, signature(_host(300)))
