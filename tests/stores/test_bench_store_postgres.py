"""``python -m bench.store_postgres`` runs (at a tiny size, against the session's PostgreSQL server)
and reports a line per thread size and policy; no timing is asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__: list[str] = []

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_postgres_store_bench_runs_and_reports_every_size(postgres_dsn: str) -> None:
    done = subprocess.run([sys.executable, "-m", "bench.store_postgres", "--dsn", postgres_dsn, "--appends", "3",
                           "--pairs", "2", "--runs", "2", "5"], cwd=ROOT, capture_output=True, text=True, timeout=300)

    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()[1:]
    rows = [line.split() for line in lines]
    assert [row[0] for row in rows] == ["2", "5", "2", "5"]
    assert [line.endswith("(default compaction)") for line in lines] == [False, False, True, True]
    # The change's bytes, and the WAL bytes per append: the server wrote something for each append.
    assert all(int(row[5]) > 0 and float(row[6]) > 0 for row in rows)
