"""The sentence builders' formatting rules."""

from __future__ import annotations

from analysis.sentences import join_names, num, pct


def test_percentages_keep_one_decimal_and_two_below_one_percent():
    assert (pct(0.87), pct(49.2), pct(-25.0), pct(-3.04)) == ("+0.87%", "+49.2%", "-25.0%", "-3.0%")


def test_numbers_get_thousands_separators():
    assert (num(46_000), num(12.345), num(999.6)) == ("46,000", "12.3", "1,000")


def test_names_are_joined_as_prose():
    assert join_names([]) == ""
    assert join_names(["a"]) == "a"
    assert join_names(["a", "b", "c"]) == "a, b and c"


def test_a_token_budget_sentence_never_prints_an_unrecorded_budget():
    from analysis.sentences import verdict_sentence
    from analysis.verdicts import verdict
    from tests.analysis.helpers import point

    evidence = verdict(point(
        "p", 64, 100.0, max_num_seqs=64, max_num_batched_tokens=None, queue_samples=10,
        mean_running=41.5, peak_running=50.0, mean_waiting=0.8, peak_kv_usage=0.1,
        mean_tokens_per_step=6.1)).evidence
    text = verdict_sentence("token_budget", evidence, partial=True)
    assert "None" not in text
    assert "engine default" in text
