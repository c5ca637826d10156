"""Shared pages beside a very large run: its own page, and /comparisons/new/ while it is recent.

    .venv/bin/python bench/large_run.py           # 10,000 points; about 10 minutes on 2 cores
    .venv/bin/python bench/large_run.py --quick   # smoke test: seconds, nothing judged

Issue 41 (finding 7): a 10,000-point import made its run page take 24.9 s and 27.7 MB, and
/comparisons/new/ 7.8 s for everyone while that run was recent. The pages must stay bounded:
the run page lists at most dashboard.views.POINTS_PER_PAGE points (the rest a page at a time),
and the comparison form at most dashboard.forms_judgement.MAX_POINT_CHOICES points and
MAX_RUN_CHOICES runs.

The script creates its own PostgreSQL database (--database-url, default headroom_large_bench on
the local server; it refuses the development and test databases' names), migrates it, imports a
small run (SMALL points) and a large one (--points) as Headroom result files would be
(benchmarks.storage.imports.import_points: the path an upload takes), and requests each page through
Django's test client, logged in, DEBUG off: full middleware, view, queries and template, no
network. Each figure is the median of --repeats warm requests after one untimed one, with the
response's size. The pages of both runs are measured side by side in this one process, so the
large/small ratio says what the extra points cost on this host, whatever its speed. The
database is dropped at the end (--keep leaves it).

--quick imports QUICK_POINTS points and times each page once; tests/bench runs it on a database
of its own, so the script keeps working.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/headroom_large_bench"
REFUSED_NAMES = ("headroom", "postgres", "test_headroom")
LARGE_POINTS = 10_000
QUICK_POINTS = 300
SMALL = 12  # points of the small run: 3 configs x 4 loads
ENGINEER_ROLE = "Engineer"


def _admin_url(url: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/postgres"))


def _recreate(url: str, drop_only: bool = False) -> None:
    import psycopg
    from psycopg import sql

    name = urlsplit(url).path.lstrip("/")
    if name in REFUSED_NAMES or name.startswith("test_"):
        raise SystemExit(f"refusing to drop and recreate the database {name!r}")
    with psycopg.connect(_admin_url(url), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
        if not drop_only:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def _configure_django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["DEBUG"] = "0"
    # The test client speaks plain HTTP: without this, DEBUG off redirects every page to https.
    os.environ["HEADROOM_HTTPS"] = "0"
    os.environ.setdefault("SECRET_KEY", "bench-only-" + "x" * 40)
    os.environ["ALLOWED_HOSTS"] = "testserver,localhost"
    import django

    django.setup()


def _point(index: int, seqs_levels: int):
    """One point of a grid: max_num_seqs by index // seqs_levels, a burst by the rest; every
    figure agrees with its counts over a 10 s window, as an imported file's would."""
    from runner.schema.engine_config import Checkpoint, EngineConfig
    from runner.schema.plan import LoadSpec, WorkloadSpec
    from runner.schema.result import (
        EngineInfo,
        Hardware,
        Metrics,
        PointResult,
        Provenance,
        Window,
        point_key,
    )

    config = EngineConfig(max_num_seqs=8 * (1 + index // seqs_levels))
    requests = 16 * (1 + index % seqs_levels)
    load = LoadSpec(shape="burst", num_requests=requests)
    duration = 10.0
    metrics = Metrics(
        duration=duration, completed=requests, failed=0, short_responses=0, valid=True,
        total_input_tokens=64 * requests, total_output_tokens=256 * requests,
        request_throughput=requests / duration, output_throughput=256 * requests / duration,
        total_token_throughput=320 * requests / duration,
        median_ttft_ms=50.0, median_tpot_ms=20.0, median_e2el_ms=5_000.0 + index % 97,
        p99_e2el_ms=9_000.0,
    )
    return PointResult(
        key=point_key(config, load, 0), engine_config=config, load=load,
        workload=WorkloadSpec(), window=Window(start=0.0, end=duration), metrics=metrics,
        provenance=Provenance(
            hardware=Hardware(host="bench-host", gpu_name="NVIDIA H200", gpu_count=1),
            engine=EngineInfo(launch_style="serve", version="0.32.0"),
            checkpoint=Checkpoint(model="Qwen/Qwen3-30B-A3B", revision="a" * 40),
            client_version="headroom-runner 0.1.0", started_at="2026-12-01T10:00:00Z"),
    )


def _import(user, name: str, count: int):
    from benchmarks.storage.imports import import_points

    levels = max(4, round(count ** 0.5))
    return import_points(((_point(i, levels), None) for i in range(count)),
                         name=name, source_file=f"{name}.jsonl", user=user)


def _client(user):
    from django.contrib.auth.models import Group
    from django.test import Client

    user.groups.add(Group.objects.get(name=ENGINEER_ROLE))
    client = Client()
    client.force_login(user)
    return client


def _timed(client, url: str, repeats: int) -> tuple[float, int]:
    """Median wall seconds of `repeats` warm requests, and the response's size in bytes."""
    response = client.get(url)  # untimed: compiled templates, an open connection
    if response.status_code != 200:
        raise SystemExit(f"GET {url} answered {response.status_code}")
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        client.get(url)
        times.append(time.perf_counter() - started)
    return statistics.median(times), len(response.content)


def main() -> int:
    warnings.filterwarnings("ignore", message="No directory at")  # whitenoise, no collectstatic
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--points", type=int, default=LARGE_POINTS)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="leave the database in place")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: a few hundred points, each page timed once")
    args = parser.parse_args()
    if args.quick:
        args.points, args.repeats = QUICK_POINTS, 1

    _recreate(args.database_url)
    _configure_django(args.database_url)
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    try:
        call_command("migrate", verbosity=0)
        user = get_user_model().objects.create_user("bench")
        client = _client(user)
        small = _import(user, "small", SMALL)
        # The comparison form with only the small run recent, then with the large one too.
        compare_before = _timed(client, "/comparisons/new/", args.repeats)
        started = time.perf_counter()
        large = _import(user, "large", args.points)
        print(f"imported {args.points:,} points in {time.perf_counter() - started:.0f} s")
        rows = [
            ("run page", _timed(client, f"/runs/{small.code}/", args.repeats),
             _timed(client, f"/runs/{large.code}/", args.repeats)),
            ("/comparisons/new/", compare_before,
             _timed(client, "/comparisons/new/", args.repeats)),
        ]
        print(f"| page | beside {SMALL} points | beside {args.points:,} points | ratio |")
        print("|---|---|---|---|")
        for page, (small_s, small_size), (large_s, large_size) in rows:
            print(f"| {page} | {small_s * 1000:.0f} ms, {small_size / 1024:.0f} KiB | "
                  f"{large_s * 1000:.0f} ms, {large_size / 1024:.0f} KiB | "
                  f"{large_s / small_s:.1f} x |")
        return 0
    finally:
        connection.close()
        if not args.keep:
            _recreate(args.database_url, drop_only=True)


if __name__ == "__main__":
    sys.exit(main())
