"""The search report's table and text (``SearchReport``)."""

from __future__ import annotations


def test_the_report_table_prints_counts_as_integers_and_says_what_is_summed() -> None:
    """Issue 38, item 5: counts print as integers beside the seconds, and the time split names what it sums."""
    from mirage_lab.search.events import SearchReport

    r = SearchReport(states=3996)
    r.pruned["cap"] = 364
    r.seconds.update(enumeration=0.7462, wall=3.036)
    df = r.to_frame()
    assert df.iloc[0]["value"] == 3996 and isinstance(df.iloc[0]["value"], int)
    assert "3996.0" not in df.to_string() and "364.0" not in df.to_string()
    assert "enumeration (summed over workers)" in set(df["kind"]) and "wall" in set(df["kind"])
    assert "summed over workers" in repr(r)
