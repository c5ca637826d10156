"""Cost per million output tokens and what a tuning is worth, on hand-computed cases."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from decimal import Decimal
from typing import Any

import pytest

from analysis import AnalysisError, cost

TODAY = date(2026, 12, 1)
USD = cost.GpuHourPrice(amount=Decimal("2.50"), currency="USD", as_of=date(2026, 11, 1))


def gpu_point(key: str, throughput: float, **fields: Any) -> cost.CostInput:
    """A point served by vLLM on a GPU host, on a node priced at 2.50 USD per GPU-hour."""
    values: dict[str, Any] = {"gpus": 1, "launch_style": "serve", "host_has_gpu": True,
                              "node": "gpu-a", "price": USD}
    return cost.CostInput(key=key, output_throughput=throughput, **{**values, **fields})


def texts(worth: cost.Worth) -> list[str]:
    return [str(sentence) for sentence in worth.sentences]


# --- one point ---------------------------------------------------------------------------------


def test_eight_gpus_at_2_50_an_hour_serving_40000_tokens_a_second():
    # 2.50 x 8 = 20 USD an hour; 40,000 x 3600 = 144,000,000 tokens an hour: 20 / 144 per
    # million = 0.13888..., shown to three significant digits.
    found = cost.point_cost(gpu_point("node", 40_000.0, gpus=8))
    assert found.per_million == pytest.approx(20 / 144)
    assert found.text == "0.139 USD"
    assert found.reason is None


@pytest.mark.parametrize(("value", "shown"), [
    (20 / 144, "0.139"),  # 0.13888...: rounds up at the third significant digit
    (2.5e6 / (18_000 * 3600), "0.0386"),  # 0.038580...
    (0.0165343, "0.0165"),  # rounds down
    (1.38888, "1.39"),
    (13.8888, "13.89"),  # never fewer than two decimals
    (1234.567, "1,234.57"),
    (0.0, "0.00"),
])
def test_a_cost_is_shown_to_three_significant_digits_and_at_least_two_decimals(value, shown):
    assert cost.figure(value) == shown


@pytest.mark.parametrize(("amount", "shown"), [
    ("2.5000", "2.50"), ("2.4567", "2.4567"), ("3", "3.00"), ("1200.5", "1,200.50")])
def test_a_price_is_shown_as_it_was_entered(amount, shown):
    assert cost.amount_text(Decimal(amount)) == shown


def test_the_gpus_are_the_points_own_replicas_times_tensor_parallel():
    # 2 replicas x TP 2 = 4 GPUs at 10,000 tok/s: 10 USD / 36 M tokens = 0.2777... per million.
    found = cost.point_cost(gpu_point("tp", 10_000.0, gpus=4))
    assert found.text == "0.278 USD"


@pytest.mark.parametrize(("fields", "reason"), [
    ({"launch_style": "cpu", "host_has_gpu": False}, cost.CPU_ENGINE),
    ({"launch_style": "serve", "host_has_gpu": False}, cost.CPU_ENGINE),  # no GPU on the host
    ({"launch_style": "attach"}, cost.ATTACHED),
    ({"run_valid": False, "valid": False}, cost.INVALID_RUN),
    ({"valid": False}, cost.FAILED_CHECKS),
    ({"node": None, "price": None}, cost.NO_NODE),
    ({"price": None}, "node gpu-a has no GPU-hour price (an administrator sets it in the catalog)"),
])
def test_a_point_without_a_cost_says_why(fields, reason):
    found = cost.point_cost(gpu_point("p", 40_000.0, **fields))
    assert (found.per_million, found.text, found.reason) == (None, None, reason)


def test_a_point_with_no_output_has_no_cost_per_token():
    assert cost.point_cost(gpu_point("p", 0.0)).reason == cost.NO_OUTPUT
    with pytest.raises(AnalysisError):
        cost.cost_per_million_output_tokens(2.5, 1, 0.0)


@pytest.mark.parametrize(("amount", "currency"), [("-1", "USD"), ("NaN", "USD"),
                                                  ("2.5", "usd"), ("2.5", "US$")])
def test_a_price_is_a_number_at_least_zero_in_an_iso_currency(amount, currency):
    with pytest.raises(AnalysisError):
        cost.GpuHourPrice(amount=Decimal(amount), currency=currency, as_of=TODAY)


# --- what a tuning is worth --------------------------------------------------------------------


def test_the_case_study_tuning_is_worth_ten_point_seven_gpus_on_an_8_gpu_node():
    # 18,000 -> 42,000 tok/s on one GPU each at 2.50 USD per GPU-hour:
    #   baseline  2.5 / (18,000 x 3600) x 1e6 = 0.038580 -> 0.0386 USD
    #   candidate 2.5 / (42,000 x 3600) x 1e6 = 0.016534 -> 0.0165 USD
    #   GPUs      8 x (42,000 / 18,000 - 1) = 10.666... -> 10.7
    worth = cost.worth(gpu_point("b", 18_000.0), gpu_point("c", 42_000.0), node_gpus=8,
                       same_spec=True, today=TODAY)
    assert worth.gpu_equivalent == pytest.approx(8 * (42 / 18 - 1))
    assert texts(worth) == [
        "The tuned setting serves this queue at 0.0165 USD per million output tokens instead "
        "of 0.0386 USD; on this 8-GPU node that is the capacity of 10.7 additional GPUs.",
        "GPU-hour price: 2.50 USD, as of 2026-11-01.",
    ]
    assert worth.money is True


def test_a_worse_candidate_gives_up_capacity():
    # 8 x (16,000 / 20,000 - 1) = -1.6 GPUs.
    worth = cost.worth(gpu_point("b", 20_000.0), gpu_point("c", 16_000.0), node_gpus=8,
                       same_spec=True, today=TODAY)
    assert worth.gpu_equivalent == pytest.approx(-1.6)
    assert texts(worth)[0].endswith("on this 8-GPU node it gives up the capacity of 1.6 GPUs.")


def test_a_candidate_on_more_gpus_is_judged_per_gpu():
    # TP 2 at 42,000 against one GPU at 18,000: 21,000 per GPU against 18,000, so
    # 8 x (21,000 / 18,000 - 1) = 1.333 -> 1.3 GPUs, not 10.7; the candidate costs
    # 2.5 x 2 / (42,000 x 3600) x 1e6 = 0.033069 -> 0.0331 USD.
    worth = cost.worth(gpu_point("b", 18_000.0), gpu_point("c", 42_000.0, gpus=2),
                       node_gpus=8, same_spec=True, today=TODAY)
    assert worth.gpu_equivalent == pytest.approx(8 * (21 / 18 - 1))
    assert texts(worth)[0] == (
        "The tuned setting serves this queue at 0.0331 USD per million output tokens instead "
        "of 0.0386 USD; on this 8-GPU node that is the capacity of 1.3 additional GPUs.")


def test_without_a_price_the_gpu_figure_stands_alone_with_the_reason():
    unpriced = {"price": None}
    worth = cost.worth(gpu_point("b", 18_000.0, **unpriced), gpu_point("c", 42_000.0),
                       node_gpus=8, same_spec=True, today=TODAY)
    assert texts(worth) == [
        "On this 8-GPU node the tuned setting has the capacity of 10.7 additional GPUs.",
        cost.NO_PRICE_BASELINE,
    ]
    assert worth.money is False
    neither = cost.worth(gpu_point("b", 18_000.0, **unpriced),
                         gpu_point("c", 42_000.0, **unpriced),
                         node_gpus=8, same_spec=True, today=TODAY)
    assert texts(neither)[1] == cost.NO_PRICE_EITHER
    candidate_only = cost.worth(gpu_point("b", 18_000.0), gpu_point("c", 42_000.0, **unpriced),
                                node_gpus=8, same_spec=True, today=TODAY)
    assert texts(candidate_only)[1] == cost.NO_PRICE_CANDIDATE


def test_two_currencies_give_no_money_figure():
    eur = cost.GpuHourPrice(amount=Decimal("2.30"), currency="EUR", as_of=USD.as_of)
    worth = cost.worth(gpu_point("b", 18_000.0), gpu_point("c", 42_000.0, price=eur),
                       node_gpus=8, same_spec=True, today=TODAY)
    assert worth.money is False
    assert texts(worth) == [
        "On this 8-GPU node the tuned setting has the capacity of 10.7 additional GPUs.",
        "No money figure: the two sides are priced in different currencies (USD and EUR).",
    ]
    assert not any("per million" in text for text in texts(worth))


def test_different_prices_in_one_currency_are_named_beside_the_money_figure():
    # The candidate's node at 3.00: 3 / (42,000 x 3600) x 1e6 = 0.019841 -> 0.0198 USD.
    dearer = cost.GpuHourPrice(amount=Decimal("3.00"), currency="USD", as_of=date(2026, 10, 1))
    worth = cost.worth(gpu_point("b", 18_000.0), gpu_point("c", 42_000.0, price=dearer),
                       node_gpus=8, same_spec=True, today=TODAY)
    assert texts(worth)[0].startswith(
        "The tuned setting serves this queue at 0.0198 USD per million output tokens instead "
        "of 0.0386 USD;")
    assert texts(worth)[1] == (
        "The two sides are priced differently: 2.50 USD per GPU-hour for the baseline (as of "
        "2026-11-01), 3.00 USD for the candidate (as of 2026-10-01); part of the cost "
        "difference is the price's.")
    same_amount = replace(USD, as_of=date(2026, 10, 1))
    dated = cost.worth(gpu_point("b", 18_000.0), gpu_point("c", 42_000.0, price=same_amount),
                       node_gpus=8, same_spec=True, today=TODAY)
    assert texts(dated)[1] == (
        "GPU-hour price: 2.50 USD on both sides, as of 2026-11-01 for the baseline and "
        "2026-10-01 for the candidate.")


@pytest.mark.parametrize(("as_of", "stale"), [
    (date(2026, 6, 4), False),  # 180 days before 2026-12-01: at the limit, not past it
    (date(2026, 6, 3), True),   # 181 days
])
def test_a_price_older_than_the_stated_age_is_said_next_to_the_money(as_of, stale):
    old = replace(USD, as_of=as_of)
    worth = cost.worth(gpu_point("b", 18_000.0, price=old), gpu_point("c", 42_000.0, price=old),
                       node_gpus=8, same_spec=True, today=TODAY)
    notes = [t for t in texts(worth) if "days old" in t]
    if stale:
        assert notes == [
            "The price as of 2026-06-03 is 181 days old, older than 180 days: GPU-hour prices "
            "change, so check it before quoting the money figure."]
    else:
        assert notes == []


@pytest.mark.parametrize(("fields", "sentence"), [
    ({"launch_style": "cpu", "host_has_gpu": False}, cost.NO_FIGURE_CPU),
    ({"launch_style": "attach"}, cost.NO_FIGURE_ATTACHED),
    ({"valid": False, "run_valid": False}, cost.NO_FIGURE_INVALID),
    ({"valid": False}, cost.NO_FIGURE_INVALID),
])
def test_a_cpu_engine_an_attached_endpoint_or_an_invalid_side_gets_no_figure(fields, sentence):
    for baseline_fields, candidate_fields in ((fields, {}), ({}, fields)):
        worth = cost.worth(gpu_point("b", 18_000.0, **baseline_fields),
                           gpu_point("c", 42_000.0, **candidate_fields),
                           node_gpus=8, same_spec=True, today=TODAY)
        assert texts(worth) == [sentence]
        assert worth.gpu_equivalent is None and worth.money is False


def test_across_input_output_specs_there_is_no_cost_comparison():
    worth = cost.worth(gpu_point("b", 18_000.0), gpu_point("c", 42_000.0), node_gpus=8,
                       same_spec=False, today=TODAY)
    assert texts(worth) == [cost.NO_FIGURE_SPECS]
    assert worth.gpu_equivalent is None


def test_without_the_nodes_gpu_count_only_the_money_is_given():
    for node_gpus in (None, 0):
        worth = cost.worth(gpu_point("b", 18_000.0), gpu_point("c", 42_000.0),
                           node_gpus=node_gpus, same_spec=True, today=TODAY)
        assert texts(worth)[0] == (
            "The tuned setting serves this queue at 0.0165 USD per million output tokens "
            "instead of 0.0386 USD.")


def test_capacities_from_several_repeats_say_so():
    worth = cost.worth(gpu_point("b", 18_000.0), gpu_point("c", 41_600.0, repeats=2),
                       node_gpus=8, same_spec=True, today=TODAY)
    assert texts(worth)[-1] == (
        "Each side's capacity is the lowest of its setting's valid repeats (1 for the "
        "baseline, 2 for the candidate).")


def test_tokens_per_joule_stand_beside_the_money_where_both_sides_measured_energy():
    # 0.5 J and 0.25 J per output token: 2 and 4 output tokens per joule.
    worth = cost.worth(gpu_point("b", 18_000.0, joules_per_output_token=0.5),
                       gpu_point("c", 42_000.0, joules_per_output_token=0.25),
                       node_gpus=8, same_spec=True, today=TODAY)
    assert texts(worth)[-1] == "Energy: 4.00 output tokens per joule instead of 2.00."
    assert worth.candidate.tokens_per_joule_text == "4.00"
    one_side = cost.worth(gpu_point("b", 18_000.0),
                          gpu_point("c", 42_000.0, joules_per_output_token=0.25),
                          node_gpus=8, same_spec=True, today=TODAY)
    assert not any("joule" in text for text in texts(one_side))


def test_every_cost_sentence_is_a_template_the_report_can_translate():
    worth = cost.worth(gpu_point("b", 18_000.0, repeats=3, joules_per_output_token=0.5),
                       gpu_point("c", 42_000.0, joules_per_output_token=0.25),
                       node_gpus=8, same_spec=True, today=TODAY)
    assert all(s.template in cost.COST_TEMPLATES for s in worth.sentences)
    assert len(worth.sentences) == 4
