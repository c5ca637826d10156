"""The run's JSON download: each point exactly as the runner wrote it, its requests streamed one
at a time instead of one string per point."""

from __future__ import annotations

import json

import pytest

from benchmarks.points import point_to_result, store_point
from runner.schema import PointResult

from .factories import make_benchmark, make_point_result

pytestmark = pytest.mark.django_db


def test_the_download_is_every_point_in_full_in_pieces(owner_client):
    benchmark = make_benchmark(state="succeeded")
    for seqs in (8, 64):
        store_point(benchmark, make_point_result(max_num_seqs=seqs, requests=25))
    response = owner_client.get(f"/runs/{benchmark.code}.json")
    pieces = list(response.streaming_content)
    data = json.loads(b"".join(pieces))
    stored = {p.key: point_to_result(p) for p in benchmark.points.all()}
    assert len(data["points"]) == 2
    for point in data["points"]:
        # The same document as the whole point's own JSON, field for field.
        assert PointResult.model_validate(point) == stored[point["key"]]
        assert point == json.loads(stored[point["key"]].model_dump_json())
    # A piece per request, not one per point: no piece holds two requests.
    per_piece = [piece.decode().count('"chunk_times"') for piece in pieces]
    assert max(per_piece) == 1 and sum(per_piece) == 2 * 25
