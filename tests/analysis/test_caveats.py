"""Which caveats a point gets, and what each says (analysis.caveats), on points built by hand."""

from __future__ import annotations

from analysis.caveats import (
    DISTURBED_CAVEAT,
    HEADROOM_IMPORT,
    LIMITATION,
    METHOD,
    SCOPE,
    automatic_caveats,
    disturbed_caveat,
)
from runner.schema.engine_config import Checkpoint
from runner.schema.result import (
    ClientHealth,
    EngineInfo,
    Hardware,
    HostCpu,
    PointResult,
    Provenance,
    SetAside,
)
from tests import factories


def _codes(result: PointResult, *, imported: bool = False) -> list[str]:
    return [code for code, _kind, _text in automatic_caveats(result, imported=imported)]


def _on(launch_style: str) -> Provenance:
    return Provenance(
        hardware=Hardware(host="h", cpu_model="Test CPU", cpu_count=2),
        engine=EngineInfo(launch_style=launch_style, version="0.32.0"),
        checkpoint=Checkpoint(model="m"), client_version="headroom-runner 0.1.0",
        started_at="2026-11-30T15:00:00Z",
    )


# 10 s on 2 cores: 12 s busy, 2 s the runner's and 6 s the engine's leave 4 s to others, 0.40
# of a core on average, above the 0.25 that disturbs a point.
BUSY_HOST = HostCpu(window_s=10, cpus=2, busy_s=12, own_s=2, engine_s=6)


def test_a_measured_point_gets_none_and_the_same_point_imported_says_where_it_came_from():
    point = factories.point_result()
    assert automatic_caveats(point, imported=False) == []
    assert _codes(point, imported=True) == [HEADROOM_IMPORT]


def test_a_cpu_engine_is_a_limitation_a_gpu_engine_is_not():
    cpu = automatic_caveats(factories.point_result(provenance=_on("cpu")), imported=False)
    assert [(code, kind) for code, kind, _ in cpu] == [("cpu-engine", LIMITATION)]
    assert _codes(factories.point_result(provenance=_on("serve"))) == []


def test_a_saturated_client_names_its_reasons_and_a_napping_one_its_nap():
    client = ClientHealth(saturated=True, reasons=["client CPU 97%", "loop lag p99 80 ms"],
                          idle_nap_us=50)
    caveats = automatic_caveats(factories.point_result(client=client), imported=False)
    assert [(code, kind) for code, kind, _ in caveats] == [
        ("client-saturated", METHOD), ("client-nap", METHOD)]
    assert caveats[0][2] == ("Client saturated (client CPU 97%; loop lag p99 80 ms): per-token "
                             "timings may be distorted.")
    assert "late by up to 50 µs" in caveats[1][2]
    unexplained = factories.point_result(client=ClientHealth(saturated=True))
    assert "(client CPU or event-loop lag)" in automatic_caveats(unexplained, imported=False)[0][2]


def test_a_point_others_took_a_core_from_is_disturbed_with_the_figures():
    caveat = disturbed_caveat(factories.point_result(host=BUSY_HOST))
    assert caveat is not None
    code, kind, text = caveat
    assert (code, kind) == (DISTURBED_CAVEAT, METHOD)
    assert "took 0.40 of a core" in text and "(above 0.25)" in text
    assert "engine used 0.60 of the host's 2 cores" in text
    assert "measured" not in text.split("engine's.")[1]  # drawn once: nothing set aside


def test_a_quiet_host_or_an_engine_it_did_not_start_is_not_disturbed():
    quiet = HostCpu(window_s=10, cpus=2, busy_s=9, own_s=2, engine_s=6)  # 0.10 of a core
    assert disturbed_caveat(factories.point_result(host=quiet)) is None
    attached = HostCpu(window_s=10, cpus=2, busy_s=12, own_s=2)  # others unknown
    assert disturbed_caveat(factories.point_result(host=attached)) is None
    assert disturbed_caveat(factories.point_result()) is None


def test_a_point_redrawn_until_the_least_disturbed_says_how_many_draws():
    host = BUSY_HOST.model_copy(update={"set_aside": [
        SetAside(taken_cores=0.9, output_throughput=100.0),
        SetAside(taken_cores=0.7, output_throughput=110.0)]})
    caveat = disturbed_caveat(factories.point_result(host=host))
    assert caveat is not None
    assert caveat[2].endswith(" It was measured 3 times and every draw was disturbed; this is "
                              "the least disturbed one.")


def test_an_invalid_point_says_its_failures_of_all_requests():
    metrics = factories.metrics(completed=90, failed=10)
    caveats = automatic_caveats(factories.point_result(metrics=metrics), imported=False)
    invalid = [c for c in caveats if c[0] == "invalid-point"]
    assert invalid == [("invalid-point", LIMITATION,
                        "Not a valid run: 10 failed and 0 short responses of 100 requests.")]


def test_another_clients_file_is_a_scope_caveat_that_names_the_client():
    bench = factories.point_result(source="vllm-bench-import")
    assert [(c, k) for c, k, _ in automatic_caveats(bench, imported=True)] == [
        ("vllm-bench-import", SCOPE)]
    guidellm = automatic_caveats(factories.point_result(source="guidellm-import"), imported=True)
    assert [(c, k) for c, k, _ in guidellm] == [("peer-import", SCOPE)]
    assert guidellm[0][2].startswith("Imported from GuideLLM: no engine queue samples")
    assert "AIPerf's scrape" not in guidellm[0][2]
