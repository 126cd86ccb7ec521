import pytest

from memory_pipeline.operator.charts import histogram, markdown_table, text_histogram


def test_histogram_bins_are_half_open_with_an_open_last_bin() -> None:
    rows = histogram([3, 3, 4, 5, 7, 8, 25], [3, 4, 5, 8])
    assert rows == [("3–4", 2), ("4–5", 1), ("5–8", 2), ("≥ 8", 2)]


def test_values_below_the_first_edge_get_their_own_bin_and_nan_is_ignored() -> None:
    assert histogram([1.2, float("nan"), 2.5], [1.5, 3]) == [("< 1.5", 1), ("1.5–3", 1), ("≥ 3", 0)]


def test_bad_edges_are_refused() -> None:
    with pytest.raises(ValueError, match="strictly increasing"):
        histogram([1], [2, 2])


def test_text_histogram_scales_the_longest_bar_to_width() -> None:
    text = text_histogram("members", [3] * 10 + [4] * 5, [3, 4, 5], width=20)
    lines = text.strip("`\n").splitlines()
    assert lines[0] == "members (n=15)"
    assert lines[1] == "3–4  " + "█" * 20 + " 10"
    assert lines[2] == "4–5  " + "█" * 10 + " 5"
    assert lines[3] == "≥ 5  0"
    assert text_histogram("members", [], [3, 4]) == "members: none this run"


def test_markdown_table_escapes_pipes_and_counts_what_it_leaves_out() -> None:
    rows = [{"a": f"x|{i}", "b": 1.234} for i in range(3)]
    table = markdown_table(rows, ["a", "b"], limit=2).splitlines()
    assert table[0] == "| a | b |"
    assert table[2] == "| x\\|0 | 1.23 |"
    assert table[-1].startswith("| … 1 more |")
    assert markdown_table([], ["a"]) == "_none_"
