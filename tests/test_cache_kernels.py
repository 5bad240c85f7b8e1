"""The cache kernels compute the right thing (never how fast): the chase is one cycle through every
line exactly once, pair blocks chain as designed, sums and triads give exact results."""

from __future__ import annotations

import numpy as np
import pytest

from perfprobe.kernels import cache_kernels as k


def _order(buf: np.ndarray, line_words: int, count: int) -> list[int]:
    """Line indices visited from line 0, `count` steps, following stored addresses."""
    base, stride = buf.ctypes.data, line_words * 8
    seen, p = [], 0
    for _ in range(count):
        seen.append(p)
        p = (int(buf[p * line_words]) - base) // stride
    return seen


@pytest.mark.parametrize("n_lines", [1, 2, 3, 17, 1000])
@pytest.mark.parametrize("seed", [1, 7, 12345])
def test_random_cycle_visits_every_line_once_in_one_cycle(n_lines: int, seed: int) -> None:
    buf = np.zeros(n_lines * 8, dtype=np.uint64)
    k.build_random_cycle(buf, n_lines, 8, seed)
    order = _order(buf, 8, n_lines + 1)
    assert sorted(order[:n_lines]) == list(range(n_lines))  # each line exactly once
    assert order[n_lines] == 0                                # ... then back to the start: one cycle


def _inserted_order(n_lines: int, seed: int) -> list[int]:
    """The cycle random insertion gives, inserting into the lines themselves (the builder's
    algorithm before it linked through a dense index array): line order from line 0."""
    mask = (1 << 64) - 1
    state, after = seed, [0] * n_lines
    for i in range(1, n_lines):
        state = (state + 0x9E3779B97F4A7C15) & mask  # splitmix64, as the kernel draws
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        j = ((z >> 32) * i) >> 32
        after[i], after[j] = after[j], i
    order, line = [], 0
    for _ in range(n_lines):
        order.append(line)
        line = after[line]
    return order


@pytest.mark.parametrize("line_words", [1, 2, 8, 16])
@pytest.mark.parametrize("n_lines", [1, 2, 5, 33, 777])
def test_random_cycle_is_random_insertion_word_for_word(line_words: int, n_lines: int) -> None:
    """Linking through the buffer's first bytes as 4-byte indices leaves the cycle insertion into
    the lines gives, for lines of any size (a word's write lands on indices already written out)."""
    buf = np.full(n_lines * line_words, 0xDEAD, dtype=np.uint64)
    k.build_random_cycle(buf, n_lines, line_words, 11)
    assert _order(buf, line_words, n_lines) == _inserted_order(n_lines, 11)


def test_random_cycle_is_not_address_order() -> None:
    buf = np.zeros(4096 * 8, dtype=np.uint64)
    k.build_random_cycle(buf, 4096, 8, 1)
    steps = np.diff(_order(buf, 8, 4096))
    assert np.mean(steps == 1) < 0.01  # a prefetcher sees no stream


def test_chase_follows_the_cycle_back_to_its_start() -> None:
    buf = np.zeros(100 * 8, dtype=np.uint64)
    k.build_random_cycle(buf, 100, 8, 3)
    start = np.uint64(buf.ctypes.data)
    assert k.chase(start, 100) == start
    assert k.chase(start, 1) == buf[0]


def test_sequential_cycle_is_address_order() -> None:
    buf = np.zeros(10 * 8, dtype=np.uint64)
    k.build_sequential_cycle(buf, 10, 8)
    assert _order(buf, 8, 11) == list(range(10)) + [0]


@pytest.mark.parametrize("second_word", [0, 1, 8, 64])
def test_pair_blocks_load_word_zero_then_the_offset_word_of_each_block(second_word: int) -> None:
    blocks, block_words = 50, 128
    buf = np.zeros(blocks * block_words, dtype=np.uint64)
    k.build_pair_blocks(buf, blocks, block_words, second_word, 5)
    base, p, visited = buf.ctypes.data, buf.ctypes.data, []
    for _ in range(blocks * (2 if second_word else 1)):
        visited.append((p - base) // 8)
        p = int(buf[(p - base) // 8])
    firsts = [w for w in visited if w % block_words == 0]
    assert sorted(firsts) == [b * block_words for b in range(blocks)]
    if second_word:
        assert all(visited[i + 1] == visited[i] + second_word for i in range(0, len(visited), 2))
    assert p == base


def _words(n: int, seed: int) -> np.ndarray:
    """n float64 elements whose bits are random 64-bit words."""
    return np.random.default_rng(seed).integers(0, 1 << 63, n, dtype=np.uint64).view(np.float64)


@pytest.mark.parametrize("n", [1, 2, 3, 63, 64, 65, 1001, 4096, 4099])
def test_read_loads_reads_every_word(n: int) -> None:
    """The vector blocks and the word-by-word tail together load every word: the OR of random
    words, and a lone set word anywhere (first, middle, last: block or tail) is seen."""
    a = _words(n, n)
    assert k.read_loads(a, 3) == np.bitwise_or.reduce(a.view(np.uint64))
    for where in {0, n // 2, n - 1}:
        lone = np.zeros(n, dtype=np.uint64)
        lone[where] = np.uint64(1) << np.uint64(63)
        assert k.read_loads(lone.view(np.float64), 1) == lone[where]


@pytest.mark.parametrize("threads", [1, 2])
def test_parallel_read_loads_every_share(threads: int) -> None:
    """Each share's OR, summed over the shares (prange reduces by +)."""
    a = _words(1000 * threads, threads)
    words = a.view(np.uint64)
    want = sum(int(np.bitwise_or.reduce(words[t * 1000:(t + 1) * 1000])) for t in range(threads))
    assert int(k.read_loads_parallel(a, threads, 2)) == want % (1 << 64)


def test_read_loads_are_as_wide_as_the_widest_vector() -> None:
    """The load width follows the host CPU: 64 bytes with AVX-512, 32 with AVX, else 16."""
    from llvmlite import binding

    features = binding.get_host_cpu_features()
    assert k.VECTOR_BYTES == (64 if features.get("avx512f") else 32 if features.get("avx") else 16)
    assert k.READ_BLOCK == 8 * k.VECTOR_BYTES


def test_triad_result_is_b_plus_scalar_c() -> None:
    n = 1003
    a, b, c = np.zeros(n), np.arange(n, dtype=np.float64), np.full(n, 2.0)
    k.triad(a, b, c, 3.0, 2)
    np.testing.assert_array_equal(a, b + 6.0)


@pytest.mark.parametrize("n", [1, 15, 16, 17, 47, 64, 1000])
def test_triad_blocks_and_tail_cover_every_element(n: int) -> None:
    """The 256-bit blocks of 16 and the element-by-element tail write each a[i] exactly once."""
    rng = np.random.default_rng(n)
    b, c = rng.random(n), rng.random(n)
    a = np.full(n + 16, -1.0)
    k.triad(a[:n], b, c, 3.0, 1)
    np.testing.assert_allclose(a[:n], b + 3.0 * c)
    assert (a[n:] == -1.0).all()  # nothing written past the end


def test_triad_on_strided_views() -> None:
    """Strided arrays take the element loop (the vector steps assume 8-byte strides)."""
    n = 100
    a, b, c = np.zeros(2 * n), np.arange(2 * n, dtype=np.float64), np.full(2 * n, 2.0)
    k.triad(a[::2], b[::2], c[::2], 3.0, 1)
    np.testing.assert_array_equal(a[::2], b[::2] + 6.0)
    assert (a[1::2] == 0.0).all()


@pytest.mark.parametrize("threads", [1, 2])
def test_parallel_triad_and_fill(threads: int) -> None:
    n = 500 * threads
    a, b, c = (np.empty(n) for _ in range(3))
    k.fill_parallel(a, 0.0, threads)
    k.fill_parallel(b, 1.0, threads)
    k.fill_parallel(c, 2.0, threads)
    k.triad_parallel(a, b, c, 0.5, threads, 3)
    np.testing.assert_array_equal(a, np.full(n, 2.0))


@pytest.mark.parametrize("huge", [True, False])
def test_a_sweeps_triad_arrays_share_one_mapping_skewed_and_apart(huge: bool) -> None:
    """Each array starts TRIAD_SKEW bytes further past a 2 MiB boundary than the one before (no 4K
    aliasing of a[i], b[i], c[i]), and none overlaps the next."""
    from perfprobe.probes.cache.buffers import HUGE_ALIGN
    from perfprobe.probes.cache.timing import TRIAD_SKEW, _triad_mapping

    n = (HUGE_ALIGN // 8) + 5  # past one huge page: the arrays' strides round up
    with _triad_mapping(n, huge) as arrays:
        starts = [arr.ctypes.data for arr in arrays]
        assert [start % HUGE_ALIGN for start in starts] == [0, TRIAD_SKEW, 2 * TRIAD_SKEW]
        assert all(arr.shape == (n,) for arr in arrays)
        assert starts[1] >= starts[0] + 8 * n and starts[2] >= starts[1] + 8 * n
        del arrays


@pytest.mark.parametrize("kind", ["read_gbs", "triad_gbs"])
def test_a_sweep_point_times_its_threads_over_a_mapping_of_its_own(kind: str) -> None:
    import os

    from perfprobe.probes.cache.timing import Timing, placed_rate

    cpus = sorted(os.sched_getaffinity(0))[:2]
    stat = placed_rate(k, kind, 1 << 20, cpus, Timing(0.0005, 3), huge=True)
    assert stat["repeats"] == 3 and stat["median"] > 0 and len(stat["cpus"]) == len(cpus)


@pytest.mark.parametrize("huge", [True, False])
def test_triad_rates_time_one_thread_then_all_over_one_mapping(huge: bool) -> None:
    """The bandwidth phase's triad (DRAM's over 2 MiB pages where THP allows, as the sweep's):
    one thread over its set, then every thread over its share, each record with its count and CPUs."""
    import os

    from perfprobe.probes.cache.timing import Timing, triad_rates

    cpus = sorted(os.sched_getaffinity(0))[:2]
    out = triad_rates(k, 3 << 20, 1 << 20, cpus, Timing(0.0005, 3), huge=huge)
    assert out["bytes_1t"] <= 3 << 20 and out["bytes_each"] <= 1 << 20
    assert out["1t"]["repeats"] == 3 and out["1t"]["median"] > 0
    assert out["all"]["median"] > 0 and len(out["all"]["cpus"]) == len(cpus)


def test_pair_costs_count_a_block_as_two_loads_in_every_figure() -> None:
    import statistics

    from perfprobe.probes.cache.timing import Timing, pair_costs

    buf = np.zeros(64 * 1024 // 8, dtype=np.uint64)
    for cost in pair_costs(k, buf, 64, 1024, [8, 64], Timing(0.0005, 3), warm_steps=128):
        assert len(cost["samples"]) == cost["repeats"] == 3
        assert cost["median"] == pytest.approx(statistics.median(cost["samples"]), rel=1e-5)
        assert cost["min"] == pytest.approx(min(cost["samples"]), rel=1e-5)


def test_a_dram_latency_confirmation_times_that_point_alone_again_over_trial_buffers() -> None:
    from perfprobe.probes.cache.measure import dram_latency_trials
    from perfprobe.probes.cache.plan import Plan
    from perfprobe.probes.cache.timing import Timing

    plan = Plan(max_bytes=64 << 10, wanted_bytes=64 << 10, cap_bytes=None, limited_by="--max-size",
                per_doubling=1, min_points=1, repeats=3, run_s=0.0005, threads=1, line_bytes=64,
                llc_bytes=16 << 10, llc_reported=True, l1_bytes=16 << 10, dram_bytes=32 << 10)
    curve = {"sizes_bytes": [4096, 32 << 10, 64 << 10],
             "latency_ns": [{"median": 1.0}, {"median": 999.0}, {"median": 2.0}]}
    again = dram_latency_trials(k, plan, Timing(0.0005, 3), False, curve, trials=4)
    assert again["latency_ns"][0] == {"median": 1.0} and again["latency_ns"][2] == {"median": 2.0}
    timed = again["latency_ns"][1]
    assert timed["repeats"] == 4 and timed["trials"] is True and len(timed["samples"]) == 4
    assert timed["repeats_per_trial"] == 3 and 0 < timed["median"] < 999.0
    assert curve["latency_ns"][1] == {"median": 999.0}  # the first measurement is left as it was


def test_dram_read_has_one_sample_a_trial_buffer_on_one_thread_and_its_repeats_on_all() -> None:
    """One thread: a trial a buffer. All threads: each thread over its own share of `all_bytes` (one
    thread's set each: plan.threads_dram_bytes), in an array of their own, five repeats."""
    import os

    from perfprobe.kernels import placement as kp
    from perfprobe.probes.cache.timing import Timing
    from perfprobe.probes.cache.trials import held_buffers, read_trials

    cpus = sorted(os.sched_getaffinity(0))[:2]
    with kp.pinned_pool(), held_buffers(4, 1 << 20, False) as held:
        read = read_trials(k, held, 1 << 20, cpus, Timing(0.0005, 5), len(cpus) << 20)
        del held
    assert read["1t"]["trials"] is True and len(read["1t"]["samples"]) == 4 and read["1t"]["median"] > 0
    assert "trials" not in read["all"] and len(read["all"]["samples"]) == 5 and read["all"]["median"] > 0
    assert read["all"]["cpus"] and read["bytes_1t"] == read["bytes_each"] == 1 << 20
    with kp.pinned_pool(), held_buffers(2, 1 << 20, False) as held:
        split = read_trials(k, held, 1 << 20, cpus, Timing(0.0005, 5), None)   # no room for more
        del held
    assert split["bytes_each"] == (1 << 20) // len(cpus) and len(split["all"]["samples"]) == 5


def test_held_trial_buffers_are_whole_huge_pages_of_one_span_and_the_all_thread_read_reuses_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each trial buffer starts on a 2 MiB boundary of one mapping and none overlaps another; the
    all-thread read runs over that span where it holds the threads' sets, so no memory new to the
    process is faulted in for it (timing.read_all would map its own)."""
    import os

    from perfprobe.kernels import placement as kp
    from perfprobe.probes.cache import timing as m
    from perfprobe.probes.cache.buffers import HUGE_ALIGN
    from perfprobe.probes.cache.timing import Timing
    from perfprobe.probes.cache.trials import held_together, read_trials

    size = 3 << 19   # 1.5 MiB: the stride rounds up to whole 2 MiB pages
    with held_together(3, size, False) as (span, held):
        starts = [b.ctypes.data for b in held]
        assert all(s % HUGE_ALIGN == 0 for s in starts) and [b.nbytes for b in held] == [size] * 3
        assert [s - starts[0] for s in starts] == [0, HUGE_ALIGN, 2 * HUGE_ALIGN]
        assert span.ctypes.data == starts[0] and span.nbytes == 3 * HUGE_ALIGN
        del held, span

    def no_new_mapping(*args: object, **kwargs: object) -> None:
        raise AssertionError("the all-thread read mapped memory of its own")

    monkeypatch.setattr(m, "page_buffer", no_new_mapping)
    cpus = sorted(os.sched_getaffinity(0))[:2]
    with kp.pinned_pool(), held_together(4, 1 << 20, False) as (span, held):
        read = read_trials(k, held, 1 << 20, cpus, Timing(0.0005, 5), len(cpus) << 20, room=span)
        with pytest.raises(AssertionError, match="of its own"):   # more than the span holds
            read_trials(k, held, 1 << 20, cpus, Timing(0.0005, 5), 16 << 20, room=span)
        del held, span
    assert read["all"]["median"] > 0 and read["bytes_each"] == 1 << 20


@pytest.mark.parametrize("pages, cpus", [(1, 1), (7, 2), (64, 2)])
def test_parallel_first_touch_writes_the_first_word_of_every_page_and_nothing_else(pages: int, cpus: int) -> None:
    import os

    from perfprobe.kernels import placement as kp
    from perfprobe.probes.cache.measure import PAGE_WORDS

    usable = sorted(os.sched_getaffinity(0))
    placed_cpus = [usable[i % len(usable)] for i in range(cpus)]
    a = np.ones(pages * PAGE_WORDS - 3, dtype=np.uint64)  # the last page partial
    with kp.pinned_pool():
        placed = k.Placed(placed_cpus)
        k.touch_pages_placed(a, PAGE_WORDS, placed.masks, placed.where)
    starts = np.arange(0, a.size, PAGE_WORDS)
    assert (a[starts] == 0).all() and int(a.sum()) == a.size - len(starts)
    assert all(int(c) >= 0 for c in placed.where)  # every share ran


def test_the_first_touch_is_parallel_only_on_one_node_with_two_cpus_or_more() -> None:
    """Latency chases read the buffer from the calling thread: a toucher spanning nodes would put
    pages on other nodes, so there is none then (and none for one CPU, where it buys nothing)."""
    from types import SimpleNamespace

    from perfprobe.probes.cache.measure import first_toucher

    one = SimpleNamespace(host={"numa": {"nodes": [{"id": 0, "cpus": [0, 1, 2, 3]}]}})
    two = SimpleNamespace(host={"numa": {"nodes": [{"id": 0, "cpus": [0, 1]}, {"id": 1, "cpus": [2, 3]}]}})
    assert first_toucher(one, k, [0, 1]) is not None  # type: ignore[arg-type]
    assert first_toucher(one, k, [0]) is None  # type: ignore[arg-type]
    assert first_toucher(two, k, [0, 2]) is None  # type: ignore[arg-type]
    assert first_toucher(two, k, [2, 3]) is not None  # type: ignore[arg-type]
