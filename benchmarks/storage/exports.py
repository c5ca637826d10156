"""A stored run in llm-d-benchmark's benchmark report format (runner.llm_d_export), for the run
page's download and `manage.py export_results --format llm-d`.

Each point is read with its engine samples but not its requests (the report holds no
per-request records), and written as one YAML document as its turn comes, so a run of many
points is never held whole.
"""

from __future__ import annotations

from collections.abc import Iterator

import yaml

from benchmarks.models import Benchmark, PointData
from benchmarks.storage.points import point_to_result
from runner import llm_d_export


def llm_d_documents(benchmark: Benchmark) -> Iterator[str]:
    """The run's reports as YAML documents, each starting with `---`, in the points' order."""
    for stage, point in enumerate(benchmark.points.all()):
        data = PointData.objects.defer("requests").get(point=point)
        result = point_to_result(point, data, requests=False)
        document = llm_d_export.report(result, run_code=str(benchmark.code),
                                       run_name=benchmark.name, stage=stage)  # fmt: skip
        yield yaml.safe_dump(document, sort_keys=False, explicit_start=True, allow_unicode=True)
