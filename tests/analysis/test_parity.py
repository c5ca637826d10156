"""Output parity of two points, request by request, on hand-built outputs."""

from __future__ import annotations

import pytest

from analysis import parity
from analysis.parity import KeptOutput, PointOutputs, compare_outputs


def outputs(key: str, by_index: dict[int, tuple[str | None, list[int]]],
            kept: bool = True, without_ids: int = 0) -> PointOutputs:
    return PointOutputs(key, kept=kept, completed_without_ids=without_ids,
                        outputs={i: KeptOutput(digest, ids) for i, (digest, ids) in
                                 by_index.items()})


def same(n: int, ids: list[int] | None = None) -> dict[int, tuple[str | None, list[int]]]:
    return {i: (f"p{i}", ids or [7, 8, 9, 10]) for i in range(n)}


@pytest.mark.parametrize(("a", "b", "agreed"), [
    ([1, 2, 3], [1, 2, 3], 3),
    ([1, 2, 3], [1, 2, 4], 2),
    ([1, 2, 3], [9, 2, 3], 0),
    ([1, 2], [1, 2, 3], 2),  # one is a prefix of the other: they part where the shorter ends
    ([], [1], 0),
])
def test_agreed_prefix(a, b, agreed):
    assert parity.agreed_prefix(a, b) == agreed
    assert parity.agreed_prefix(b, a) == agreed


def test_identical_outputs_are_counted_and_said():
    result = compare_outputs(outputs("a", same(5)), outputs("b", same(5)))
    assert result.measured
    assert (result.compared, result.identical, result.diverged) == (5, 5, ())
    assert str(result.sentence) == "Outputs identical for 5 of 5 requests compared."
    assert result.notes == ()
    assert not result.beyond_tolerance


def test_a_divergence_is_placed_where_the_common_prefix_ends():
    after = same(200)
    after[3] = ("p3", [7, 8, 0, 0])   # agreed 2 tokens
    after[9] = ("p9", [7, 8, 9, 0])   # agreed 3
    after[11] = ("p11", [7, 8, 9])    # one token shorter: agreed 3
    result = compare_outputs(outputs("a", same(200)), outputs("b", after))
    assert result.compared == 200 and result.identical == 197
    assert [(d.index, d.agreed_tokens) for d in result.diverged] == [(3, 2), (9, 3), (11, 3)]
    assert result.diverged[2].candidate_tokens == 3 and result.diverged[2].baseline_tokens == 4
    assert str(result.sentence) == (
        "Outputs identical for 197 of 200 requests compared; 3 diverged, the earliest after "
        "token 2 (median after token 3).")
    # 1.5% is beyond the 1% default: flagged, without the batch-variance reassurance.
    templates = [note.template for note in result.notes]
    assert templates == [parity.BEYOND]
    assert result.beyond_tolerance
    assert result.diverged_pct == pytest.approx(1.5)


def test_the_tolerance_is_a_strict_bound():
    after = same(100)
    after[0] = ("p0", [0])
    at_limit = compare_outputs(outputs("a", same(100)), outputs("b", after), tolerance_pct=1.0)
    assert at_limit.diverged_pct == pytest.approx(1.0)
    assert not at_limit.beyond_tolerance
    # Within the tolerance, divergence is described as batch variance, never hidden.
    assert [n.template for n in at_limit.notes] == [parity.BATCH_VARIANCE]
    # One more diverged output crosses it.
    after[1] = ("p1", [0])
    beyond = compare_outputs(outputs("a", same(100)), outputs("b", after), tolerance_pct=1.0)
    assert beyond.beyond_tolerance
    assert str(beyond.notes[-1]) == (
        "Outputs changed for 2.0% of compared requests, more than the 1.0% this installation "
        "tolerates and more than batch variance alone explains: check quality before shipping "
        "the change.")


def test_different_prompts_are_never_counted_as_identical():
    other = {i: (f"q{i}", ids) for i, (_, ids) in same(4).items()}
    result = compare_outputs(outputs("a", same(4)), outputs("b", other))
    assert not result.measured
    assert result.identical == 0 and result.different_prompts == 4
    assert str(result.sentence).startswith("Outputs were not compared: the two points sent "
                                           "different prompts for all 4")


def test_some_different_prompts_are_set_apart_and_named():
    after = same(4)
    after[2] = ("other", after[2][1])
    result = compare_outputs(outputs("a", same(4)), outputs("b", after))
    assert result.measured and result.compared == 3 and result.different_prompts == 1
    assert "1 requests sent different prompts" in " ".join(map(str, result.notes))


def test_a_missing_prompt_digest_is_not_a_match():
    """Two records with no digest (a server that sent no prompt ids) prove nothing."""
    before = {0: (None, [1, 2])}
    result = compare_outputs(outputs("a", before), outputs("b", dict(before)))
    assert not result.measured and result.different_prompts == 1


def test_requests_on_one_side_only_are_unpaired():
    before = same(5)
    after = same(5)
    del after[4]
    result = compare_outputs(outputs("a", before), outputs("b", after))
    assert result.compared == 4 and result.unpaired == 1
    assert "1 requests completed with kept outputs on one side only" in str(result.notes[-1])


@pytest.mark.parametrize(("kept", "phrase"), [
    ((False, True), "the baseline did not keep"),
    ((True, False), "the candidate did not keep"),
    ((False, False), "neither point kept"),
])
def test_outputs_not_kept_say_which_side(kept, phrase):
    result = compare_outputs(outputs("a", {}, kept=kept[0]), outputs("b", same(3), kept=kept[1]))
    assert not result.measured and result.compared == 0
    assert phrase in str(result.sentence)


def test_a_server_without_token_ids_is_named():
    result = compare_outputs(outputs("a", {}, without_ids=8), outputs("b", same(8)))
    assert not result.measured
    assert "returned no token ids for the baseline" in str(result.sentence)


def test_nothing_in_common():
    result = compare_outputs(outputs("a", {0: ("p0", [1])}), outputs("b", {1: ("p1", [1])}))
    assert not result.measured and result.unpaired == 2
    assert str(result.sentence) == parity.NOTHING_IN_COMMON


def test_every_template_fills_from_its_values():
    """The templates a report translates are exactly the ones the sentences use."""
    after = same(10)
    after[0] = ("x", [1])
    after[1] = ("p1", [0])
    del after[2]
    result = compare_outputs(outputs("a", same(10)), outputs("b", after), tolerance_pct=0)
    for sentence in (result.sentence, *result.notes):
        assert sentence.template in parity.PARITY_TEMPLATES
        str(sentence)
