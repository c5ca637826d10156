"""The summary printed after a run reads in an 80-column terminal: short cells, notes below."""

from __future__ import annotations

import re

import pytest

from runner.measure.summary import print_summary
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec
from runner.schema.result import ClientHealth, PointResult
from runner.schema.samples import QueueSummary
from tests import factories
from tests.runner.importer.test_results_and_import import make_point

LAG_REASON = (
    "event-loop lag p99 12.0 ms (limit 5 ms): per-token times are distorted; the client itself "
    "was mostly idle, so other processes on this host starved it"
)
CPU_REASON = (
    "a client process used 97% of a core (limit 90%): arrival stamps may be late; use more "
    "client processes"
)


@pytest.fixture(autouse=True)
def terminal_of_80_columns(monkeypatch):
    # rich takes its width from COLUMNS when it is not writing to a terminal.
    monkeypatch.setenv("COLUMNS", "80")


def wide_point(**metrics: object) -> PointResult:
    """A point whose key is too long for one line of the point column, under a rate load."""
    config = EngineConfig(max_num_seqs=256, max_num_batched_tokens=8192)
    load = LoadSpec(shape="rate", rate=12.5, num_requests=2048, max_concurrency=256)
    figures = {
        "output_throughput": 12345.0,
        "median_ttft_ms": 1234.0,
        "median_tpot_ms": 12.3,
        "median_e2el_ms": 123456.0,
        "p99_e2el_ms": 223456.0,
        **metrics,
    }
    return factories.point_result(
        engine_config=config,
        load=load,
        metrics=make_point(1).metrics.model_copy(update=figures),
        queue=QueueSummary(samples=40, mean_running=255.9, mean_waiting=1792.0, peak_kv_usage=1.0),
    )


def printed(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def as_prose(lines: list[str]) -> str:
    """The output with its wrapping undone, so a sentence reads as one string."""
    return " ".join(line.strip() for line in lines)


def note(lines: list[str], number: str) -> list[str]:
    """The lines of note (N): its first line and the indented ones that continue it."""
    start = next(i for i, line in enumerate(lines) if line.startswith(f"({number}) "))
    end = start + 1
    while end < len(lines) and lines[end].startswith("    "):
        end += 1
    return lines[start:end]


def test_a_long_client_saturation_reason_goes_below_the_table_and_fits_80_columns(capsys):
    saturated = wide_point().model_copy(
        update={"client": ClientHealth(saturated=True, reasons=[CPU_REASON, LAG_REASON])}
    )

    print_summary([saturated])

    lines = printed(capsys)
    assert max(len(line) for line in lines) <= 80
    row = next(line for line in lines if line.startswith(" seqs=256,tokens=8192|") and "%" in line)
    number = re.search(r"no \((\d+)\)\s*$", row).group(1)  # the client cell: "no (N)"
    saturation = note(lines, number)
    assert as_prose(saturation) == (
        f"({number}) {saturated.key}: client saturated: {CPU_REASON}; {LAG_REASON}"
    )
    assert len(saturation) <= 5
    assert as_prose(lines).count(LAG_REASON) == 1


def test_a_napping_client_is_named_below_the_table_whether_or_not_it_saturated(capsys):
    napped = wide_point().model_copy(update={"client": ClientHealth(idle_nap_us=150)})
    both = wide_point().model_copy(
        update={"client": ClientHealth(idle_nap_us=150, saturated=True, reasons=[CPU_REASON])}
    )

    print_summary([napped, both])

    lines = printed(capsys)
    assert max(len(line) for line in lines) <= 80
    nap = "the client napped 150 µs on idle loop passes: stamps can be late by up to that"
    cells = [re.search(r"(yes|no) \((\d+)\)\s*$", line) for line in lines if "%" in line]
    verdicts = [(m.group(1), m.group(2)) for m in cells if m]
    assert [v for v, _ in verdicts] == ["yes", "no"]
    assert as_prose(note(lines, verdicts[0][1])) == f"({verdicts[0][1]}) {napped.key}: {nap}"
    assert as_prose(note(lines, verdicts[1][1])) == (
        f"({verdicts[1][1]}) {both.key}: client saturated: {CPU_REASON}; {nap}"
    )


def test_a_client_that_did_not_nap_gets_no_note(capsys):
    print_summary([wide_point()])
    assert "napped" not in as_prose(printed(capsys))


def test_the_summary_says_its_latency_is_vllms_from_the_actual_send(capsys):
    print_summary([make_point(4)])

    prose = as_prose(printed(capsys))
    assert "ms from the actual send: TTFT, TPOT and E2EL as vllm bench serve computes them" in prose


def test_it_shows_goodput_and_the_share_meeting_every_slo_when_slos_were_set(capsys):
    slos = {"ttft": 200.0, "e2el": 2000.0}
    met = wide_point(
        request_goodput=3.21,
        goodput_slos=slos,
        slo_attainment={"ttft": 0.9, "e2el": 0.5, "all": 0.45},
    )

    print_summary([met])

    lines = printed(capsys)
    assert max(len(line) for line in lines) <= 80
    assert any("good" in line and "all SLOs" in line for line in lines)
    row = next(line for line in lines if "3.21" in line)
    assert row.startswith(" seqs=256,tokens=8192|")
    assert row.split()[-2:] == ["3.21", "45%"]
    assert "goodput: requests/s within ttft <= 200 ms, e2el <= 2000 ms" in as_prose(lines)


def test_it_has_no_goodput_columns_when_no_slo_was_set(capsys):
    print_summary([make_point(4), make_point(32)])

    out = capsys.readouterr().out
    assert "good" not in out and "SLOs" not in out


def test_points_with_different_slos_each_name_theirs_in_a_note(capsys):
    strict = make_point(4).metrics.model_copy(
        update={"request_goodput": 1.0, "goodput_slos": {"ttft": 100.0}}
    )
    loose = make_point(32).metrics.model_copy(
        update={"request_goodput": 3.0, "goodput_slos": {"ttft": 900.0}}
    )

    print_summary([make_point(4).model_copy(update={"metrics": strict}),
                   make_point(32).model_copy(update={"metrics": loose})])  # fmt: skip

    prose = as_prose(printed(capsys))
    assert "seqs=4|burst 8|r0: goodput within ttft <= 100 ms" in prose
    assert "seqs=32|burst 8|r0: goodput within ttft <= 900 ms" in prose


def test_an_invalid_point_is_marked_in_its_cell_and_explained_below(capsys):
    broken = make_point(4).metrics.model_copy(
        update={"valid": False, "completed": 6, "failed": 2, "incomplete_responses": 1}
    )

    print_summary([make_point(4).model_copy(update={"metrics": broken})])

    lines = printed(capsys)
    row = next(line for line in lines if line.startswith(" seqs=4|burst 8|r0") and "no (" in line)
    number = re.search(r"no \((\d+)\)", row).group(1)
    assert as_prose(note(lines, number)) == (
        f"({number}) seqs=4|burst 8|r0: not valid: 2 of 8 requests failed, 0 came back short; "
        "1 of 8 responses that vLLM counts as completed were not whole (no [DONE], no usage, "
        "or an error event)"
    )


def test_a_caveat_every_point_shares_is_one_note(capsys):
    caveat = "short responses cannot be checked: the file does not record max_tokens"
    imported = [
        make_point(seqs).model_copy(update={"source": "vllm-bench-import", "notes": [caveat]})
        for seqs in (4, 32)
    ]

    print_summary(imported)

    prose = as_prose(printed(capsys))
    assert prose.count(caveat) == 1
    assert f"(1) every point: {caveat}" in prose


def test_an_imported_point_does_not_claim_a_healthy_client(capsys):
    imported = make_point(4).model_copy(update={"source": "vllm-bench-import"})

    print_summary([imported])

    # One row in each table; the second, the queue table's, ends with the client cell.
    rows = [line for line in printed(capsys) if line.startswith(" seqs=4|burst 8|r0")]
    assert len(rows) == 2
    assert rows[1].split()[-2:] == ["yes", "-"]


def test_a_reason_with_brackets_is_printed_as_written(capsys):
    odd = make_point(4).model_copy(
        update={"client": ClientHealth(saturated=True, reasons=["lag [bold]high[/bold]"])}
    )

    print_summary([odd])

    assert "client saturated: lag [bold]high[/bold]" in capsys.readouterr().out
