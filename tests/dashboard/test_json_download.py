"""The run's JSON download: each point exactly as the runner wrote it, its requests streamed one
at a time instead of one string per point."""

from __future__ import annotations

import json

import pytest

from benchmarks.storage.points import point_to_result, store_point
from runner.schema.result import PointResult
from tests.rows import make_benchmark, make_point_result

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


def test_the_download_writes_requests_as_blocks_are_decoded_never_a_whole_point(
    owner_client, monkeypatch
):
    from benchmarks.storage import columnar

    benchmark = make_benchmark(state="succeeded")
    store_point(benchmark, make_point_result(requests=40))
    stored = point_to_result(benchmark.points.get())
    # 4 chunk times and 4 token counts a request: 2 requests a block
    monkeypatch.setattr(columnar, "RAGGED_BLOCK_VALUES", 20)
    blocks = []
    iter_blocks = columnar.iter_request_blocks

    def spy(blob):
        for block in iter_blocks(blob):
            blocks.append(len(block))
            yield block

    def refuse(*args, **kwargs):
        raise AssertionError("the download decoded a point's records whole")

    monkeypatch.setattr(columnar, "iter_request_blocks", spy)
    monkeypatch.setattr(columnar, "decode_requests", refuse)
    response = owner_client.get(f"/runs/{benchmark.code}.json")
    (point,) = json.loads(b"".join(response.streaming_content))["points"]
    assert point == json.loads(stored.model_dump_json())
    assert sum(blocks) == 40 and max(blocks) == 2
