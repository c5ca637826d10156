"""One config's load levels: the probe, the halving, the bound and the knee rule's answer."""

from __future__ import annotations

from runner.schema.search_record import SearchSpec
from runner.search.levels import Levels
from runner.search.observation import Observation

LABELS = ["c1", "c2", "c4", "c8", "c16", "c32"]


def seen(throughput: float, latency: float = 1000.0, valid: bool = True) -> Observation:
    return Observation(throughput, valid, 1.0, {"median_e2el_ms": latency})


def test_the_highest_load_goes_first_and_bounds_the_config_only_once_measured():
    levels = Levels(SearchSpec(), LABELS)
    assert levels.bound(0.0) is None
    first = levels.next()
    assert first is not None and (first.level, first.phase) == (5, "probe")

    levels.add(2, seen(80.0))
    assert levels.bound(0.0) is None, "a lower level bounds nothing above it"
    levels.add(5, seen(100.0))
    assert levels.bound(0.05) == 105.0


def test_halving_stops_once_the_knee_lies_between_two_adjacent_levels():
    curve = [10.0, 20.0, 40.0, 80.0, 99.0, 100.0]
    latency = [1000.0, 1000.0, 1000.0, 1000.0, 1000.0, 2000.0]
    levels = Levels(SearchSpec(), LABELS)
    order = []
    while (choice := levels.next()) is not None:
        order.append(choice.level)
        levels.add(choice.level, seen(curve[choice.level], latency[choice.level]))

    assert order[0] == 5
    assert len(order) < len(LABELS)
    assert levels.answer() == 4  # the point before the step that adds 1% for +100% latency


def test_an_invalid_repeat_never_stands_for_its_level():
    levels = Levels(SearchSpec(), LABELS)
    levels.add(5, seen(500.0, valid=False))
    assert levels.value(5) is None and levels.peak() is None
    levels.add(5, seen(90.0))
    assert levels.value(5) == 90.0
    levels.add(5, seen(80.0))
    assert levels.value(5) == 80.0, "the lowest valid repeat, as a capacity"


def test_the_slo_answer_is_the_fastest_level_within_every_limit():
    spec = SearchSpec(objective="slo", limits={"median_e2el_ms": 1500.0})
    levels = Levels(spec, LABELS)
    for level, (throughput, latency) in enumerate(
        [(10, 900), (20, 1000), (40, 1400), (60, 1500), (70, 1501), (75, 3000)]
    ):
        levels.add(level, seen(throughput, latency))

    assert levels.answer() == 3  # at the limit is within it; one ms over is not


def probed(cost) -> Levels:
    """A config whose probe at the highest load found it on the plateau: the knee lies below."""
    levels = Levels(SearchSpec(), LABELS, cost=cost)
    levels.add(5, seen(100.0))
    return levels


def test_with_equal_costs_the_refinement_halves_the_interval():
    for cost in (lambda level: None, lambda level: 7.0):
        choice = probed(cost).next()
        assert choice is not None and (choice.level, choice.phase) == (2, "refine")
        assert "c4 halves that" in choice.reason


def test_the_cheaper_of_two_levels_that_narrow_as_much_is_chosen():
    # Below c16 the knee lies in c1..c8; c2 and c4 each rule out two levels at worst.
    seconds = {0: 10.0, 1: 5.0, 2: 20.0, 3: 10.0}
    levels = Levels(SearchSpec(), LABELS[:5], cost=seconds.get)
    levels.add(4, seen(100.0))
    choice = levels.next()

    assert choice is not None and choice.level == 1
    assert "c2 narrows it as well as c4 at 5 s instead of 20 s" in choice.reason


def test_a_closed_loops_slow_low_levels_give_way_to_more_narrowing_per_second():
    # 64 requests at each level: one in flight takes 64 rounds, sixteen take four.
    choice = probed(lambda level: 64 / 2**level).next()

    assert choice is not None and choice.level == 3
    assert "c8 rules out 2 level(s) at 8 s, more per second than c4's 3 at 16 s" in choice.reason
