"""The summary a runner command prints when it ends: tables that fit 80 columns, and notes.

Latencies and the engine's queue get a table each, and a conversation point one by turn. Cells
hold figures and short marks such as "no (1)"; a reason or caveat, however long, is a numbered
note below the tables, so nothing wraps one cell over many lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from runner.schema.result import IMPORTED_SOURCES, PointResult


def slo_text(slos: dict[str, float]) -> str:
    """'ttft <= 500 ms, e2el <= 5000 ms': a request meets goodput when it is within every one."""
    return ", ".join(f"{name} <= {ms:g} ms" for name, ms in slos.items())


# A point key longer than this is broken at its "|" onto lines of the point column, so the
# tables stay within 80 columns.
POINT_COLUMN_WIDTH = 24
LATENCY_CAPTION = (
    "ms from the actual send: TTFT, TPOT and E2EL as vllm bench serve computes them (latency "
    "from the intended send, sched_*, is in the result file)"
)


class _Notes:
    """The numbered lines under the summary; a cell shows only the number.

    A text that several points share (an imported file's caveats) is one line naming them all.
    """

    def __init__(self, points: Sequence[PointResult]) -> None:
        self.total = len(points)
        self.keys: dict[str, list[str]] = {}  # text -> the points it is about, in order

    def mark(self, point: PointResult, text: str) -> str:
        keys = self.keys.setdefault(text, [])
        if point.key not in keys:
            keys.append(point.key)
        return f"({list(self.keys).index(text) + 1})"

    def table(self) -> Table:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold")  # a hanging indent under the number
        for number, (text, keys) in enumerate(self.keys.items(), start=1):
            about = "every point" if self.total > 1 and len(keys) == self.total else ", ".join(keys)
            grid.add_row(f"({number})", Text(f"{about}: {text}"))
        return grid


def print_summary(points: Sequence[PointResult]) -> None:
    notes = _Notes(points)
    out = Console()
    table, caption = _latency_table(points, notes)
    out.print(table)
    # Under the table, not as its caption: a caption wraps at the table's width, not the screen's.
    out.print(Text(caption))
    out.print()
    out.print(_queue_table(points, notes))
    for point in points:
        if point.conversations is not None:
            table, line = _turn_table(point)
            out.print()
            out.print(table)
            out.print(Text(line))
    if notes.keys:
        out.print(notes.table())


def _summary_table(title: str, columns: Sequence[str], *, point_column: bool = True) -> Table:
    table = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        collapse_padding=True,
        pad_edge=False,
        title_justify="left",
    )
    if point_column:
        table.add_column("point", max_width=POINT_COLUMN_WIDTH, overflow="fold")
    for column in columns:
        # Figures never wrap; the point column gives way instead.
        table.add_column(column, justify="right", no_wrap=True)
    return table


def _point_cell(point: PointResult, marks: Sequence[str] = ()) -> Text:
    key = point.key if len(point.key) <= POINT_COLUMN_WIDTH else point.key.replace("|", "|\n")
    return Text(" ".join([key, *marks]))


def _latency_table(points: Sequence[PointResult], notes: _Notes) -> tuple[Table, str]:
    """The table and the line under it that says which latency it shows."""
    columns = ["out\ntok/s", "TTFT\np50", "TPOT\np50", "E2EL\np50", "E2EL\np99"]
    with_goodput = [p for p in points if p.metrics.request_goodput is not None]
    # An imported file may keep vLLM's request_goodput without its SLOs; the importer's own
    # note on the point says so.
    slo_sets = {tuple(p.metrics.goodput_slos.items()) for p in with_goodput}
    caption = LATENCY_CAPTION
    if with_goodput:
        columns += ["good\nreq/s", "all SLOs\nmet"]
        if len(slo_sets) == 1 and with_goodput[0].metrics.goodput_slos:
            # One set for all: said once here rather than once per point.
            slos = slo_text(with_goodput[0].metrics.goodput_slos)
            caption += f"; goodput: requests/s within {slos}"
    table = _summary_table("results: throughput and latency", columns)
    for point in points:
        metrics = point.metrics
        marks = [notes.mark(point, note) for note in point.notes]
        if len(slo_sets) > 1 and metrics.goodput_slos:
            slos = slo_text(metrics.goodput_slos)
            marks.append(notes.mark(point, f"goodput within {slos}"))
        cells = [
            _fmt(metrics.output_throughput),
            _fmt(metrics.median_ttft_ms),
            _fmt(metrics.median_tpot_ms, ",.1f"),
            _fmt(metrics.median_e2el_ms),
            _fmt(metrics.p99_e2el_ms),
        ]
        if with_goodput:
            cells += [
                _fmt(metrics.request_goodput, ",.2f"),
                _fmt(metrics.slo_attainment.get("all"), ".0%"),
            ]
        table.add_row(_point_cell(point, marks), *cells)
    return table, caption


def _queue_table(points: Sequence[PointResult], notes: _Notes) -> Table:
    columns = ["mean\nrunning", "mean\nwaiting", "peak\nKV", "valid", "client"]
    table = _summary_table("results: engine queue and checks", columns)
    for point in points:
        queue = point.queue
        running = _fmt(queue.mean_running, ",.1f")
        if point.window is not None and queue.samples == 0:
            # Dashes alone would read as an idle engine; the note says why there are none.
            running += " " + notes.mark(
                point,
                f"no /metrics sample fell inside its {point.window.seconds:.2f} s window, so it "
                "has no queue figures; measure more requests or longer outputs, or lower the "
                "plan's sample_interval_s",
            )
        table.add_row(
            _point_cell(point),
            running,
            _fmt(queue.mean_waiting, ",.1f"),
            _fmt(queue.peak_kv_usage, ".0%"),
            _validity(point, notes),
            _client_health(point, notes),
        )
    return table


def _turn_table(point: PointResult) -> tuple[Table, str]:
    """A conversation workload's point by turn number (runner.workloads.conversations), with its
    conversations' time under it: later turns carry the conversation so far, so their prompts
    grow and their TTFT shows what the prefix cache saved."""
    talks = point.conversations
    assert talks is not None
    columns = ["turn", "requests", "done", "prompt\ntokens", "TTFT\np50", "TTFT\np99",
               "E2EL\np50", "E2EL\np99"]
    table = _summary_table(f"{point.key}: conversations by turn (ms from the actual send)",
                           columns, point_column=False)
    for turn in talks.by_turn:
        table.add_row(
            str(turn.turn), str(turn.requests), str(turn.completed),
            _fmt(turn.mean_prompt_tokens, ",.1f"), _fmt(turn.median_ttft_ms),
            _fmt(turn.p99_ttft_ms), _fmt(turn.median_e2el_ms), _fmt(turn.p99_e2el_ms),
        )  # fmt: skip
    line = (
        f"{talks.completed_conversations} of {talks.conversations} conversations completed every "
        f"turn; conversation time p50 {_fmt(talks.median_duration_ms)} ms, p99 "
        f"{_fmt(talks.p99_duration_ms)} ms (first send to last turn's end)"
    )
    return table, line


def _validity(point: PointResult, notes: _Notes) -> str:
    metrics = point.metrics
    requests = metrics.completed + metrics.failed
    problems = []
    if not metrics.valid:
        problems.append(
            f"not valid: {metrics.failed} of {requests} requests failed, "
            f"{metrics.short_responses} came back short"
        )
    if metrics.incomplete_responses:
        problems.append(
            f"{metrics.incomplete_responses} of {requests} responses that vLLM counts as "
            "completed were not whole (no [DONE], no usage, or an error event)"
        )
    verdict = "yes" if metrics.valid else "no"
    return f"{verdict} {notes.mark(point, '; '.join(problems))}" if problems else verdict


def _client_health(point: PointResult, notes: _Notes) -> str:
    if point.source in IMPORTED_SOURCES:
        return "-"  # the file does not say how the client fared
    nap = point.client.idle_nap_us
    problems = []
    if point.client.saturated:
        problems.append("client saturated: " + ("; ".join(point.client.reasons) or "no reason "
                                                 "recorded"))
    if nap > 0:
        problems.append(f"the client napped {nap:g} µs on idle loop passes: stamps can be late "
                        "by up to that")
    verdict = "no" if point.client.saturated else "yes"
    return f"{verdict} {notes.mark(point, '; '.join(problems))}" if problems else verdict


def _fmt(value: float | None, spec: str = ",.0f") -> str:
    return "-" if value is None else format(value, spec)
