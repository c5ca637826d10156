"""Trace replay and request-length logs without an engine: the readers (and their refusals, by
line), Mooncake prompts built as vLLM's timed-trace reader builds them, the schedule a trace
gives (speed, span, truncation), and length draws that follow the log's histogram."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np
import orjson
import pytest
from pydantic import ValidationError

from runner.cli.commands import CliError, plan_from_bench_args
from runner.cli.parser import build_parser
from runner.client.responses import request_body
from runner.client.schedule import plan_jobs, send_offsets, send_schedule
from runner.measure.metrics import short_responses
from runner.schema.plan import ClientSpec, LoadSpec, SweepPlan, WorkloadSpec
from runner.schema.records import RequestRecord
from runner.schema.result import PointResult
from runner.workloads.prompts import Prompt, WorkloadError, build_prompts
from runner.workloads.trace_prompts import annotate_point, length_histogram, sample_lengths
from runner.workloads.traces import (
    TraceError,
    check_source,
    load_source,
    read_length_log,
    read_trace,
)
from tests.runner.importer.test_results_and_import import make_point

BURSTGPT_HEADER = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"


class WordTokenizer:
    """A stand-in for the server's /tokenize: one token per word, ids from a fixed vocabulary."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        return len(text.split())

    def token_ids(self, text: str) -> list[int]:
        return [self.vocab.setdefault(word, 10 + len(self.vocab)) for word in text.split()]


def mooncake(tmp_path: Path, rows: list[dict], name: str = "trace.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def trace_workload(path: Path, **fields) -> WorkloadSpec:
    return WorkloadSpec(kind="trace", dataset_path=path.name, **fields)


MOONCAKE_ROWS = [
    {"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [1, 2, 3]},
    {"timestamp": 400, "input_length": 1100, "output_length": 7, "hash_ids": [1, 2, 3]},
    {"timestamp": 1000, "input_length": 600, "output_length": 3, "hash_ids": [1, 4]},
    {"timestamp": 2500, "input_length": 512, "output_length": 9, "hash_ids": [5]},
    {"timestamp": 4000, "input_length": 300, "output_length": 2, "hash_ids": [1]},
]


# ---------------------------------------------------------------------------------------------
# Readers
# ---------------------------------------------------------------------------------------------


def test_it_reads_a_mooncake_trace_in_seconds_in_arrival_order(tmp_path):
    rows = [MOONCAKE_ROWS[1], MOONCAKE_ROWS[0], MOONCAKE_ROWS[2]]  # a merged trace, unsorted
    source = read_trace(mooncake(tmp_path, rows))
    assert source.format == "mooncake"
    assert [(r.line, r.arrival_s, r.input_tokens, r.output_tokens, r.hash_ids)
            for r in source.rows] == [
        (2, 0.0, 1100, 5, (1, 2, 3)), (1, 0.4, 1100, 7, (1, 2, 3)), (3, 1.0, 600, 3, (1, 4))]
    assert source.span_s == 1.0


def test_it_reads_a_burstgpt_csv_leaving_out_failed_rows(tmp_path):
    path = tmp_path / "burst.csv"
    path.write_text(f"{BURSTGPT_HEADER}\n"
                    "5,ChatGPT,120,30,150,Conversation log\n"
                    "7.5,GPT-4,80,0,80,Conversation log\n"  # failed in the log
                    "9,GPT-4,64,16,80,API log\n")
    source = read_trace(path)
    assert source.format == "burstgpt"
    assert [(r.line, r.arrival_s, r.input_tokens, r.output_tokens) for r in source.rows] == [
        (2, 5.0, 120, 30), (4, 9.0, 64, 16)]
    assert source.failed_rows == 1


def test_it_reads_a_plain_csv_trace(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("timestamp_s,input_tokens,output_tokens\n0.5,10,4\n0.25,20,8\n")
    source = read_trace(path)
    assert source.format == "csv"
    assert [(r.arrival_s, r.input_tokens, r.output_tokens) for r in source.rows] == [
        (0.25, 20, 8), (0.5, 10, 4)]


@pytest.mark.parametrize(("text", "message"), [
    ('{"timestamp": 0, "input_length": 5, "output_length": 2}\n{"timestamp": 1, '
     '"output_length": 2}\n', r"trace.jsonl:2: no 'input_length'"),
    ('{"timestamp": 0, "input_length": 5, "output_length": 2}\n\n'
     '{"timestamp": 1, "input_length": 2.5, "output_length": 2}\n',
     r"trace.jsonl:3: input_length must be a whole number"),
    ('{"timestamp": 0, "input_length": 0, "output_length": 2}\n',
     r"trace.jsonl:1: input_length must be >= 1"),
    ('{"timestamp": 0, "input_length": 5, "output_length": 2, "hash_ids": [1, -2]}\n',
     r"trace.jsonl:1: hash_ids must be a list of whole numbers >= 0"),
    ('{"timestamp": "soon", "input_length": 5, "output_length": 2}\n',
     r"trace.jsonl:1: timestamp must be a finite number"),
    ('{"timestamp": 0, "input_length": 5, "output_length": 2}\nnot json\n',
     r"trace.jsonl:2: not JSON"),
    ('{"timestamp": 0, "input_length": true, "output_length": 2}\n',
     r"trace.jsonl:1: input_length must be a whole number"),
])
def test_it_refuses_a_bad_mooncake_row_naming_its_line(tmp_path, text, message):
    path = tmp_path / "trace.jsonl"
    path.write_text(text)
    with pytest.raises(TraceError, match=message):
        read_trace(path)


@pytest.mark.parametrize(("text", "message"), [
    (f"{BURSTGPT_HEADER}\n1,GPT-4,10,5,15,API log\n2,GPT-4,ten,5,15,API log\n",
     r"t.csv:3: Request tokens must be a whole number"),
    (f"{BURSTGPT_HEADER}\n1,GPT-4,10,5,15,API log\n2,GPT-4,10\n", r"t.csv:3: expected 6 columns"),
    ("timestamp_s,input_tokens,output_tokens\n1,2,3\nnan,2,3\n",
     r"t.csv:3: timestamp_s must be a finite number"),
    ("time,prompt,completion\n1,2,3\n", r"t.csv:1: not a trace"),
])
def test_it_refuses_a_bad_csv_row_naming_its_line(tmp_path, text, message):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(TraceError, match=message):
        read_trace(path)


def test_it_refuses_a_forced_format_whose_header_is_missing_a_column(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("timestamp_s,input_tokens,output_tokens\n1,2,3\n")
    with pytest.raises(TraceError, match=r"t.csv:1: the header lacks Timestamp, Request tokens"):
        read_trace(path, "burstgpt")


def test_it_reads_a_length_log_under_the_names_tools_export(tmp_path):
    csv_log = tmp_path / "log.csv"
    csv_log.write_text("prompt_tokens,completion_tokens\n100,20\n300,0\n50,5\n")
    source = read_length_log(csv_log)
    assert [(r.input_tokens, r.output_tokens) for r in source.rows] == [(100, 20), (50, 5)]
    assert source.failed_rows == 1
    jsonl_log = tmp_path / "log.jsonl"
    jsonl_log.write_text('{"input_tokens": 7, "output_tokens": 3}\n'
                         '{"id": "x", "usage": {"prompt_tokens": 9, "completion_tokens": 4}}\n')
    assert [(r.input_tokens, r.output_tokens) for r in read_length_log(jsonl_log).rows] == [
        (7, 3), (9, 4)]


def test_it_refuses_a_length_log_row_without_counts_naming_its_line(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"input_tokens": 7, "output_tokens": 3}\n{"input_tokens": 7}\n')
    with pytest.raises(TraceError, match=r"log.jsonl:2: expected an input count"):
        read_length_log(path)


# ---------------------------------------------------------------------------------------------
# Mooncake prompts
# ---------------------------------------------------------------------------------------------


def trace_prompts(tmp_path: Path, rows: list[dict], n: int | None = None, **fields) -> list[Prompt]:
    path = mooncake(tmp_path, rows)
    return build_prompts(trace_workload(path, **fields), n or len(rows), WordTokenizer(),
                         data_dir=tmp_path)


def test_mooncake_prompts_have_the_traces_lengths_and_share_its_hash_id_blocks(tmp_path):
    prompts = trace_prompts(tmp_path, MOONCAKE_ROWS)
    ids = [p.tokens.ids() for p in prompts]
    assert [len(i) for i in ids] == [1100, 1100, 600, 512, 300]
    assert [p.input_tokens for p in prompts] == [1100, 1100, 600, 512, 300]
    assert [p.max_tokens for p in prompts] == [5, 7, 3, 9, 2]
    assert ids[0] == ids[1]  # the same hash ids: the same prompt
    assert ids[2][:512] == ids[0][:512] and ids[2][512:] != ids[0][512:600]  # block 1 only
    assert ids[3][:512] != ids[0][:512]
    # A partial block is keyed by its size too (as vLLM's): hash id 1 cut to 300 tokens is
    # another block than its full 512.
    assert ids[4] != ids[0][:300]


def test_mooncake_prompts_match_the_block_sharing_of_vllms_timed_trace_reader(tmp_path):
    from vllm.benchmarks.datasets.datasets import TimedTrace

    class Vocab:
        all_special_ids = [0]

        def get_vocab(self) -> dict[str, int]:
            return {f"t{i}": i for i in range(1000)}

    path = mooncake(tmp_path, MOONCAKE_ROWS)
    vllm_prompts = [s.prompt for s in TimedTrace(
        dataset_path=str(path), random_seed=0, timed_trace_chunk_hash_size=512,
        timed_trace_sec_multiplier=0.001, timed_trace_label_timestamp="timestamp",
        timed_trace_label_input_length="input_length",
        timed_trace_label_output_length="output_length",
        timed_trace_label_hash_ids="hash_ids",
    ).sample(Vocab(), len(MOONCAKE_ROWS))]
    ours = [p.tokens.ids() for p in trace_prompts(tmp_path, MOONCAKE_ROWS)]
    assert [len(p) for p in ours] == [len(p) for p in vllm_prompts]

    def same_blocks(prompts: list[list[int]]) -> set[tuple[int, int, int]]:
        """(row a, row b, block k) where both rows hold the same tokens in block k."""
        return {
            (a, b, k)
            for a, b in itertools.combinations(range(len(prompts)), 2)
            for k in range(3)
            if prompts[a][k * 512:(k + 1) * 512] == prompts[b][k * 512:(k + 1) * 512]
            and len(prompts[a]) > k * 512
        }

    assert same_blocks(ours) == same_blocks(vllm_prompts)


def test_mooncake_prompts_are_fixed_by_the_seed(tmp_path):
    first = [p.tokens.ids() for p in trace_prompts(tmp_path, MOONCAKE_ROWS[:2])]
    again = [p.tokens.ids() for p in trace_prompts(tmp_path, MOONCAKE_ROWS[:2])]
    other = [p.tokens.ids() for p in trace_prompts(tmp_path, MOONCAKE_ROWS[:2], seed=1)]
    assert first == again and first != other


def test_a_request_whose_hash_ids_fall_short_gets_the_rest_as_tokens_of_its_own(tmp_path):
    rows = [{"timestamp": 0, "input_length": 700, "output_length": 1, "hash_ids": [1]},
            {"timestamp": 1, "input_length": 700, "output_length": 1, "hash_ids": [1]},
            {"timestamp": 2, "input_length": 40, "output_length": 1, "hash_ids": []}]
    ids = [p.tokens.ids() for p in trace_prompts(tmp_path, rows)]
    assert [len(i) for i in ids] == [700, 700, 40]
    assert ids[0][:512] == ids[1][:512] and ids[0][512:] != ids[1][512:]


def test_the_block_size_follows_the_workload(tmp_path):
    rows = [{"timestamp": 0, "input_length": 40, "output_length": 1, "hash_ids": [1, 2, 3]},
            {"timestamp": 1, "input_length": 40, "output_length": 1, "hash_ids": [1, 9, 9]}]
    ids = [p.tokens.ids() for p in trace_prompts(tmp_path, rows, trace_block_tokens=16)]
    assert ids[0][:16] == ids[1][:16] and ids[0][16:32] != ids[1][16:32]


def test_a_trace_workload_needs_the_servers_token_ids(tmp_path):
    path = mooncake(tmp_path, MOONCAKE_ROWS)
    with pytest.raises(WorkloadError, match="needs the server's tokenizer"):
        build_prompts(trace_workload(path), 2, lambda text: 1, data_dir=tmp_path)


def test_a_token_id_prompt_goes_out_as_ids_with_its_own_max_tokens(tmp_path):
    prompt = trace_prompts(tmp_path, MOONCAKE_ROWS[3:4])[0]
    body = orjson.loads(request_body(trace_workload(tmp_path / "trace.jsonl"), "m", prompt))
    assert body["prompt"] == prompt.tokens.ids() and len(body["prompt"]) == 512
    assert body["max_tokens"] == 9 and body["ignore_eos"] is True


def test_a_trace_file_outside_the_data_directory_is_refused(tmp_path):
    mooncake(tmp_path, MOONCAKE_ROWS)
    workload = WorkloadSpec(kind="trace", dataset_path="../trace.jsonl")
    with pytest.raises(WorkloadError, match="not inside the data directory"):
        check_source(workload, tmp_path / "data", [LoadSpec(num_requests=1)])


# ---------------------------------------------------------------------------------------------
# The schedule
# ---------------------------------------------------------------------------------------------


def test_a_trace_load_sends_at_the_trace_times_over_the_speed(tmp_path):
    prompts = trace_prompts(tmp_path, MOONCAKE_ROWS)
    assert send_offsets(LoadSpec(shape="trace", num_requests=5), 0, prompts) == [
        0.0, 0.4, 1.0, 2.5, 4.0]
    assert send_offsets(LoadSpec(shape="trace", num_requests=4, speed=2), 0, prompts) == [
        0.0, 0.2, 0.5, 1.25]


def test_a_trace_starting_late_is_replayed_from_its_first_request(tmp_path):
    rows = [dict(row, timestamp=row["timestamp"] + 3_600_000) for row in MOONCAKE_ROWS[:2]]
    prompts = trace_prompts(tmp_path, rows)
    assert send_offsets(LoadSpec(shape="trace", num_requests=2), 0, prompts) == pytest.approx(
        [0.0, 0.4])


def test_the_client_workers_keep_every_trace_time(tmp_path):
    from runner.client.schedule import Target

    prompts = trace_prompts(tmp_path, MOONCAKE_ROWS)
    load = LoadSpec(shape="trace", num_requests=5, speed=0.5, max_concurrency=4)
    jobs = plan_jobs([Target(0, "http://x", "m")], load, ClientSpec(processes=2), prompts, 0)
    assert sorted(item.offset for job in jobs for item in job.items) == [
        0.0, 0.8, 2.0, 5.0, 8.0]


def test_a_span_keeps_the_requests_that_arrive_before_it(tmp_path):
    path = mooncake(tmp_path, MOONCAKE_ROWS)
    source = load_source(trace_workload(path, trace_span_s=2.5), tmp_path)
    assert [r.arrival_s for r in source.rows] == [0.0, 0.4, 1.0]  # 2.5 s itself is outside
    assert source.rows_before_span == 5


def test_a_load_shorter_than_the_trace_replays_its_first_requests_with_a_note(tmp_path):
    path = mooncake(tmp_path, MOONCAKE_ROWS)
    workload = trace_workload(path, trace_span_s=3)
    load = LoadSpec(shape="trace", num_requests=3, speed=2)
    source = check_source(workload, tmp_path, [load])
    point = make_point(4).model_copy(update={"workload": workload, "load": load})
    annotate_point(point, source)
    assert "trace cut to its first 3 s: 4 of 5 requests (4.0 s in all)" in point.notes
    assert ("trace truncated to its first 3 of 4 requests (the load's request count)"
            in point.notes)


def test_a_load_shorter_than_the_trace_is_refused_when_the_workload_says_so(tmp_path):
    path = mooncake(tmp_path, MOONCAKE_ROWS)
    workload = trace_workload(path, trace_longer="refuse")
    with pytest.raises(WorkloadError, match="would leave out 1 of the 5"):
        check_source(workload, tmp_path, [LoadSpec(shape="trace", num_requests=4)])
    assert check_source(workload, tmp_path, [LoadSpec(shape="trace", num_requests=5)])


def test_a_load_longer_than_the_trace_is_refused(tmp_path):
    path = mooncake(tmp_path, MOONCAKE_ROWS)
    with pytest.raises(WorkloadError, match=r"6 requests, but the trace trace.jsonl holds 5"):
        check_source(trace_workload(path), tmp_path, [LoadSpec(shape="trace", num_requests=6)])
    with pytest.raises(WorkloadError, match="6 warm-up requests"):
        check_source(trace_workload(path), tmp_path, [LoadSpec(num_requests=5)], warmup=6)
    with pytest.raises(WorkloadError, match="6 requests, but the first 2 s of the trace"):
        check_source(trace_workload(path, trace_span_s=2), tmp_path,
                     [LoadSpec(shape="trace", num_requests=6)])
    with pytest.raises(WorkloadError, match=r"6 requests, but the trace trace.jsonl holds 5"):
        build_prompts(trace_workload(path), 6, WordTokenizer(), data_dir=tmp_path)


def record(index: int, intended: float, actual: float | None, **fields) -> RequestRecord:
    return RequestRecord(index=index, intended_send=intended, actual_send=actual, **fields)


def test_the_schedule_reports_the_scheduled_and_achieved_rate_and_the_send_lag():
    records = [record(0, 0.0, 0.001), record(1, 1.0, 1.003), record(2, 2.0, 2.5),
               record(3, 3.0, None, error="cancelled")]
    schedule = send_schedule(LoadSpec(shape="trace", num_requests=4), records)
    assert schedule is not None
    assert (schedule.requests, schedule.sent) == (4, 3)
    assert schedule.scheduled_rate == pytest.approx(1.0)  # 3 gaps over 3 s
    assert schedule.achieved_rate == pytest.approx(2 / 2.499)
    assert schedule.max_send_lag_ms == pytest.approx(500.0)
    assert schedule.mean_send_lag_ms == pytest.approx((1 + 3 + 500) / 3)
    assert send_schedule(LoadSpec(shape="concurrency", concurrency=2, num_requests=4),
                         records) is None
    burst = send_schedule(LoadSpec(num_requests=2), [record(0, 0, 0.01), record(1, 0, 0.02)])
    assert burst is not None and burst.scheduled_rate is None


# ---------------------------------------------------------------------------------------------
# Length distributions
# ---------------------------------------------------------------------------------------------


def bimodal_log(tmp_path: Path, rows: int = 1000) -> Path:
    rng = np.random.default_rng(7)
    short = rng.integers(20, 80, size=rows // 2)
    long = rng.integers(600, 900, size=rows - rows // 2)
    inputs = rng.permutation(np.concatenate([short, long]))
    outputs = np.where(inputs < 300, 16, 128) + rng.integers(0, 8, size=rows)
    path = tmp_path / "log.csv"
    path.write_text("input_tokens,output_tokens\n"
                    + "".join(f"{i},{o}\n" for i, o in zip(inputs, outputs, strict=True)))
    return path


def share_gap(log: list, drawn: list, field: str) -> float:
    """The largest difference between the log's and the draw's share of one histogram bin."""
    histogram = length_histogram([getattr(r, field) for r in log],
                                 [getattr(r, field) for r in drawn])
    source = np.asarray(histogram.source) / len(log)
    sent = np.asarray(histogram.sent) / len(drawn)
    return float(np.abs(source - sent).max())


def test_length_draws_follow_the_logs_histogram(tmp_path):
    path = bimodal_log(tmp_path)
    log = read_length_log(path).rows
    drawn = sample_lengths(log, 256, seed=3)
    # The draw is systematic in input length: every bin within one request of the log's share.
    assert share_gap(log, drawn, "input_tokens") <= 1.5 / len(drawn)
    # Output lengths ride along with their rows: as close as a random sample of 256 would be.
    assert share_gap(log, drawn, "output_tokens") <= 0.06
    small = sample_lengths(log, 64, seed=3)
    assert share_gap(log, small, "input_tokens") <= 1.5 / len(small)
    pairs = {(r.input_tokens, r.output_tokens) for r in log}
    assert all((r.input_tokens, r.output_tokens) in pairs for r in drawn)  # rows kept whole


def test_drawing_as_many_requests_as_the_log_holds_sends_every_row_once(tmp_path):
    log = read_length_log(bimodal_log(tmp_path, rows=200)).rows
    drawn = sample_lengths(log, 200, seed=5)
    assert sorted(r.line for r in drawn) == sorted(r.line for r in log)


def test_length_draws_are_fixed_by_the_seed_and_shuffled(tmp_path):
    log = read_length_log(bimodal_log(tmp_path, rows=100)).rows
    first = [r.line for r in sample_lengths(log, 50, seed=1)]
    assert first == [r.line for r in sample_lengths(log, 50, seed=1)]
    assert first != [r.line for r in sample_lengths(log, 50, seed=2)]
    inputs = [next(r.input_tokens for r in log if r.line == line) for line in first]
    assert inputs != sorted(inputs)


def test_a_lengths_workload_sends_token_prompts_of_the_drawn_lengths(tmp_path):
    bimodal_log(tmp_path, rows=40)
    workload = WorkloadSpec(kind="lengths", dataset_path="log.csv", ignore_eos=False)
    prompts = build_prompts(workload, 40, WordTokenizer(), data_dir=tmp_path)
    log = read_length_log(tmp_path / "log.csv").rows
    assert Counter((len(p.tokens.ids()), p.max_tokens) for p in prompts) == Counter(
        (r.input_tokens, r.output_tokens) for r in log)
    assert all(p.input_tokens == len(p.tokens) for p in prompts)
    # Two draws of one row are two requests: their prompts are their own.
    assert len({tuple(p.tokens.ids()[:8]) for p in prompts}) == len(prompts)


def test_a_point_compares_the_logs_lengths_with_what_it_sent(tmp_path):
    bimodal_log(tmp_path, rows=40)
    workload = WorkloadSpec(kind="lengths", dataset_path="log.csv")
    source = check_source(workload, tmp_path, [LoadSpec(num_requests=3)])
    requests = [record(i, 0, 0, prompt_tokens=p, output_tokens=o, max_tokens=o, replica=rep)
                for rep in (0, 1) for i, (p, o) in enumerate([(30, 16), (700, 130), (35, 17)])]
    point = make_point(4).model_copy(update={"workload": workload, "requests": requests})
    annotate_point(point, source)
    assert point.lengths is not None
    assert (point.lengths.source_requests, point.lengths.sent_requests) == (40, 3)
    histogram = point.lengths.input_tokens
    assert sum(histogram.source) == 40 and sum(histogram.sent) == 3
    assert len(histogram.edges) == len(histogram.sent) + 1 <= 31
    assert histogram.edges[0] <= 30 and histogram.edges[-1] > 700
    assert any("request lengths drawn from log.csv (40 requests), seed 0" in n
               for n in point.notes)
    assert PointResult.model_validate_json(point.model_dump_json()).lengths == point.lengths


def test_a_histogram_puts_each_value_in_its_bin():
    histogram = length_histogram([1, 2, 3, 31], [1, 31, 31])
    assert histogram.edges[:3] == [1, 3, 5] and histogram.edges[-1] == 33  # 16 bins of 2
    assert histogram.source[:2] == [2, 1] and histogram.source[-1] == 1
    assert histogram.sent[0] == 1 and histogram.sent[-1] == 2
    assert length_histogram([5, 5], [5]).edges == [5, 6]


def test_a_short_response_is_held_to_its_own_max_tokens():
    workload = WorkloadSpec(output_tokens=256)
    records = [record(0, 0, 0, output_tokens=10, max_tokens=10),
               record(1, 0, 0, output_tokens=9, max_tokens=10),
               record(2, 0, 0, output_tokens=256)]
    assert short_responses(records, workload) == 1


# ---------------------------------------------------------------------------------------------
# Schema and command line
# ---------------------------------------------------------------------------------------------


def test_a_trace_load_needs_a_trace_workload():
    with pytest.raises(ValidationError, match="a trace load replays a trace workload"):
        SweepPlan(checkpoint={"model": "org/m"}, engine_configs=[{}],
                  loads=[LoadSpec(shape="trace", num_requests=4)])


@pytest.mark.parametrize(("fields", "message"), [
    ({"kind": "trace", "dataset_path": "t.jsonl", "endpoint": "chat"}, "completions endpoint"),
    ({"kind": "trace"}, "needs dataset_path"),
    ({"kind": "lengths"}, "needs dataset_path"),
    ({"kind": "random", "trace_span_s": 10}, "only apply to a trace workload"),
    ({"kind": "trace", "dataset_path": "t.jsonl", "trace_span_s": 0}, "trace_span_s"),
])
def test_it_refuses_a_workload_a_trace_cannot_run(fields, message):
    with pytest.raises(ValidationError, match=message):
        WorkloadSpec(**fields)


@pytest.mark.parametrize(("fields", "message"), [
    ({"shape": "rate", "rate": 2, "speed": 2}, "speed replays a trace"),
    ({"shape": "trace", "speed": 0}, "speed must be a finite factor"),
    ({"shape": "trace", "speed": float("inf")}, "speed must be a finite factor"),
    ({"shape": "trace", "rate": 2}, "takes speed"),
])
def test_it_refuses_a_load_a_trace_cannot_run(fields, message):
    with pytest.raises(ValidationError, match=message):
        LoadSpec(num_requests=4, **fields)


def test_a_trace_load_is_labelled_with_its_speed():
    assert LoadSpec(shape="trace", num_requests=500, speed=2).label() == "trace x2 x 500"
    assert (LoadSpec(shape="trace", num_requests=5, speed=0.5, max_concurrency=2).label()
            == "trace x0.5 x 5 (max 2 in flight)")


def bench_args(*extra: str):
    return build_parser().parse_args(["bench", "--model", "org/m", "--out", "x.jsonl", *extra])


def test_the_command_line_makes_a_trace_replay():
    plan = plan_from_bench_args(bench_args(
        "--workload", "trace", "--dataset", "t.jsonl", "--shape", "trace", "--speed", "2",
        "--trace-span", "60", "--trace-refuse-longer", "--num-requests", "10"))
    plan = SweepPlan.model_validate(plan)
    assert plan.loads[0] == LoadSpec(shape="trace", num_requests=10, speed=2)
    assert (plan.workload.kind, plan.workload.trace_span_s, plan.workload.trace_longer) == (
        "trace", 60, "refuse")


def test_the_command_line_refuses_a_speed_without_a_trace_load():
    with pytest.raises(CliError, match="--speed replays a trace"):
        plan_from_bench_args(bench_args("--speed", "2"))
