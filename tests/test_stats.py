import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfprobe.pure.stats import summarize


def test_summarize_reports_median_and_spread():
    summary = summarize([3.0, 1.0, 2.0, 10.0])
    assert summary["median"] == 2.5
    assert summary["min"] == 1.0 and summary["max"] == 10.0
    assert summary["repeats"] == 4
    assert summary["iqr"] > 0


def test_summarize_needs_samples():
    with pytest.raises(ValueError):
        summarize([])


@given(st.lists(st.floats(min_value=1e-9, max_value=1e9), min_size=1, max_size=50))
def test_median_lies_between_min_and_max(samples):
    summary = summarize(samples)
    assert summary["min"] <= summary["median"] <= summary["max"]
    assert summary["iqr"] >= 0
