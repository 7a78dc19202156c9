"""What an append, and a claim with its release, cost a ``PostgresStore`` as a thread grows:
``python -m bench.store_postgres --dsn 'host=127.0.0.1 port=5432 user=me dbname=bench'``.

For threads of 10, 100 and 1,000 runs (each run one user and one assistant message, about 1 KiB of
data a run), it times ``--appends`` appends of one more run each (compaction off, so each one is an
append alone; median and mean per append) and ``--pairs`` claim+release pairs, and reads how much
write-ahead log the server wrote for them (``pg_current_wal_lsn()`` before and after): the bytes an
append makes the server write, which must not grow with the thread. A last line runs the appends
with the default compaction policy, where the occasional fold is spread over the appends.

The DSN may also come from ``AGUI_TEST_POSTGRES_DSN``. Nothing is asserted; BENCHMARKS.md-style
numbers for a run go in the change's report. The tables it makes are dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agui_client.stores import Compaction, PostgresStore  # noqa: E402

NEVER = Compaction(min_bytes=1 << 50, ratio=1e9, max_changes=1 << 30)


def _run(n: int) -> list[dict[str, Any]]:
    # One run: a short question and an answer of about 1 KiB.
    return [{"id": f"u{n}", "role": "user", "content": f"question {n}"},
            {"id": f"a{n}", "role": "assistant", "content": f"answer {n} " + "lorem ipsum " * 80}]


def _thread(runs: int) -> dict[str, Any]:
    return {"threadId": "bench", "messages": [m for n in range(runs) for m in _run(n)], "state": {"turn": runs}}


def _change(n: int, messages: int) -> dict[str, Any]:
    return {"messagesFrom": messages, "messages": _run(n), "set": {"state": {"turn": n}, "lastRunId": f"run-{n}"},
            "merge": {"usageByRun": {f"run-{n}": [{"inputTokens": n}]}}}


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def _wal(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
    assert row is not None
    return int(row[0])


def measure(dsn: str, runs: int, appends: int, pairs: int, compaction: Compaction) -> dict[str, float]:
    table = f"agui_bench_{uuid.uuid4().hex[:12]}"
    store = PostgresStore(dsn, table=table, compaction=compaction)
    try:
        data = _thread(runs)
        version = store.save("bench", data, expected_version=None)
        messages = len(data["messages"])
        times = []
        wal = _wal(dsn)
        for n in range(runs, runs + appends):
            change = _change(n, messages)
            start = time.perf_counter()
            version = store.append("bench", change, expected_version=version)
            times.append(time.perf_counter() - start)
            messages += 2
        append_wal = (_wal(dsn) - wal) / appends
        pair_times = []
        wal = _wal(dsn)
        for _ in range(pairs):
            start = time.perf_counter()
            claimed = store.claim("bench", expected_version=version, owner="bench")
            version = store.release("bench", claimed_version=claimed, owner="bench")
            pair_times.append(time.perf_counter() - start)
        pair_wal = (_wal(dsn) - wal) / pairs
        loaded = store.load("bench")
        assert loaded is not None and len(loaded.data["messages"]) == messages
        return {"append_median": statistics.median(times), "append_mean": statistics.fmean(times),
                "append_wal": append_wal, "change_bytes": _json_bytes(_change(runs, messages)),
                "pair_median": statistics.median(pair_times), "pair_wal": pair_wal,
                "data_kib": _json_bytes(data) / 1024}
    finally:
        import psycopg
        from psycopg import sql

        store.close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}, {}").format(sql.Identifier(table),
                                                                       sql.Identifier(f"{table}_changes")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.store_postgres", description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", default=os.environ.get("AGUI_TEST_POSTGRES_DSN"))
    ap.add_argument("--appends", type=int, default=200)
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--runs", type=int, nargs="+", default=[10, 100, 1000])
    args = ap.parse_args(argv)
    if not args.dsn:
        ap.error("give --dsn (or set AGUI_TEST_POSTGRES_DSN)")
    print(f"{'runs':>6} {'data KiB':>9} {'append ms (median/mean)':>24} {'change B':>9} {'WAL B/append':>13} "
          f"{'claim+release ms':>17} {'WAL B/pair':>11}")
    for label, compaction in (("", NEVER), (" (default compaction)", Compaction())):
        for runs in args.runs:
            r = measure(args.dsn, runs, args.appends, args.pairs, compaction)
            print(f"{runs:>6} {r['data_kib']:>9.0f} {r['append_median'] * 1e3:>11.3f} / {r['append_mean'] * 1e3:<10.3f}"
                  f" {r['change_bytes']:>9} {r['append_wal']:>13.0f} {r['pair_median'] * 1e3:>17.3f}"
                  f" {r['pair_wal']:>11.0f}{label}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
