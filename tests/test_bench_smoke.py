"""The performance suite runs end to end (``python -m bench --tiny``) and reports every measure.

No timing is asserted here, ever: the suite's numbers are for BENCHMARKS.md, not for CI. This only
checks that it completes, that every fold it timed folded the stream correctly (the suite exits
non-zero otherwise), and that its JSON holds a row per kind, size and measure.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("chat", "state", "tools", "snapshot", "mixed")
MEASURES = ("json.loads", "replay(sse)", "replay(jsonl)", "http run()")
FOLDS = ("replay(sse)", "replay(jsonl)", "http run()")

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("bench") / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--tiny", "--no-oracle", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=540, check=False)
    assert proc.returncode == 0, f"python -m bench --tiny failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "first event" in proc.stdout  # the table was printed
    return json.loads(out.read_text())


def test_every_kind_size_and_measure_has_a_row(results: dict) -> None:
    rows = results["rows"]
    have = {(r["kind"], r["size"], r["measure"]) for r in rows}
    measures = MEASURES + (("orjson.loads",) if results["machine"]["orjson"] else ())
    for kind in KINDS:
        for size in ("base", "4x"):
            for measure in measures:
                assert (kind, size, measure) in have, (kind, size, measure)
    for r in rows:
        assert r["error"] is None, r
        assert r["median_s"] is not None and r["median_s"] > 0, r
        assert len(r["samples_s"]) >= 1


def test_sizes_grow_and_growth_is_reported(results: dict) -> None:
    rows = {(r["kind"], r["size"], r["measure"]): r for r in results["rows"]}
    for kind in KINDS:
        base, big = rows[(kind, "base", "json.loads")], rows[(kind, "4x", "json.loads")]
        assert big["events"] > base["events"] and big["bytes"] > base["bytes"]
        for measure in MEASURES:
            assert rows[(kind, "4x", measure)]["growth_exponent"] is not None


def test_folds_have_memory_and_agree(results: dict) -> None:
    rows = {(r["kind"], r["size"], r["measure"]): r for r in results["rows"]}
    for kind in KINDS:
        for size in ("base", "4x"):
            folded = [rows[(kind, size, m)] for m in FOLDS]
            for r in folded:
                assert r["peak_bytes"] > 0 and r["state_bytes"] > 0 and r["memory_ratio"] > 0, r
            # replay(sse), replay(jsonl) and the HTTP path fold the same stream to the same thread
            assert len({json.dumps(r["result"], sort_keys=True) for r in folded}) == 1, folded


def test_first_event_latency_and_targets(results: dict) -> None:
    first = [r for r in results["rows"] if r["measure"] == "first event"]
    assert len(first) == 1 and first[0]["error"] is None
    assert len(first[0]["samples_s"]) == results["config"]["ttfe_reps"]
    assert first[0]["p95_s"] >= first[0]["median_s"] > 0
    targets = {t["target"] for t in results["targets"]}
    assert any("json.loads" in t for t in targets) and any("growth" in t for t in targets)
    assert any("peak memory" in t for t in targets) and any("first event" in t for t in targets)
    assert any("replay(sse)" in t and "http" in t for t in targets)


def test_sse_form_is_gen_py_sse_output(tmp_path: Path) -> None:
    """The suite frames the JSONL lines itself; that must be byte-identical to ``gen.py --sse``."""
    sys.path.insert(0, str(ROOT))
    try:
        from bench import gen
        from bench.run import make_stream
    finally:
        sys.path.remove(str(ROOT))
    stream = make_stream("mixed", "base", 0.01, 1, tmp_path)
    expected = io.BytesIO()
    gen.write("mixed", 1, 0.01, True, expected)
    assert stream.sse == expected.getvalue()
    assert stream.jsonl_path.read_bytes() == stream.jsonl


def test_the_scaling_probe_folds_every_shape_at_both_sizes(tmp_path: Path) -> None:
    # ``python -m bench.scaling``: shapes the gen.py kinds lack (no timing asserted).
    out = tmp_path / "scaling.json"
    proc = subprocess.run([sys.executable, "-m", "bench.scaling", "-n", "50", "--reps", "1", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert [r["shape"] for r in rows] == ["many runs", "results for one message", "nested steps", "pending calls",
                                          "snapshot per run"]
    assert all(r["bytes"][1] > 3 * r["bytes"][0] and min(r["seconds"]) > 0 for r in rows)


def test_the_concurrency_benchmark_runs_every_stack_and_mode(tmp_path: Path) -> None:
    # ``python -m bench.concurrency --smoke``: a few runs at once, each stack and mode (no timing asserted).
    out = tmp_path / "concurrency.json"
    proc = subprocess.run([sys.executable, "-m", "bench.concurrency", "--smoke", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    results = json.loads(out.read_text())
    rows = {(r["mode"], r["n"], r["stack"]): r for r in results["rows"]}
    assert all(r["error"] is None for r in rows.values()), [r for r in rows.values() if r["error"]]
    full_events, paced_events = results["config"]["full_events"], results["config"]["paced_events"]
    for n in (1, 3):
        for stack in ("agui_client", "hand-written"):
            full, paced = rows[("full", n, stack)], rows[("paced", n, stack)]
            # every run was read to its end, by both stacks, and folded (a fold error is an error above)
            assert full["events"] == [n * full_events] and full["cpu_s"][0] > 0
            assert paced["events"] == [n * paced_events]
            assert 0 <= paced["p50_ms"][0] <= paced["p99_ms"][0] <= paced["max_ms"][0]
    for mode in ("full", "paced"):
        assert rows[(mode, 2, "agui_client sync")]["events"][0] > 0
    idle = {r["stack"]: r for r in results["rows"] if r["mode"] == "idle"}
    assert set(idle) == {"httpx alone", "hand-written", "agui_client"}
    assert all(r["traced_per_run"][0] > 0 for r in idle.values())
    assert rows[("replay", 1, "agui_client")]["rate"] > 0
    assert any("beyond httpx" in t["target"] for t in results["targets"])
    assert "x hand-written" in proc.stdout  # the table was printed


def test_the_save_benchmark_runs_and_sizes_every_save(tmp_path: Path) -> None:
    # python -m bench.saves: threads of two sizes, whole-thread saves against appended changes.
    # Sizes only (bytes are not timings): a whole-thread save grows with the thread, an append does not.
    out = tmp_path / "saves.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.saves", "--runs", "30", "--marks", "3,30", "--samples", "4",
         "--stores", "memory,sqlite", "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300,
        check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = {(r["store"], r["mode"]): r for r in json.loads(out.read_text())}
    assert set(results) == {(s, m) for s in ("memory", "sqlite") for m in ("full", "incremental")}
    for (store, mode), result in results.items():
        small, large = result["windows"]
        assert (small["runs"], large["runs"]) == (3, 30)
        assert small["save_median_us"] > 0 and large["run_median_us"] > 0
        # (the store call made once more after the runs, alone, was timed too; page faults were counted)
        assert small["alone_cpu_median_us"] > 0 and large["alone_median_us"] > 0
        assert small["save_faults_mean"] >= 0 and large["save_faults_mean"] >= 0
        if mode == "full":
            assert large["operations"] == {"save": 4}
            assert large["bytes_per_save"] > 5 * small["bytes_per_save"], (store, small, large)
        else:
            assert large["operations"] == {"append": 4}
            assert large["bytes_per_save"] < 1.2 * small["bytes_per_save"], (store, small, large)


def test_the_sqlite_append_benchmark_reports_every_measure_at_every_size() -> None:
    # ``python -m bench.sqlite_append``: a SqliteStore's append, claim+release, save and load (no timing asserted).
    proc = subprocess.run([sys.executable, "-m", "bench.sqlite_append", "--runs", "10", "100", "--reps", "3"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {(int(runs), name): (float(ms), float(cpu), float(nbytes))
            for runs, name, ms, cpu, nbytes in (line.split() for line in proc.stdout.splitlines()[1:])}
    measures = ("append", "append~", "claim+release", "save", "load")
    assert sorted(rows) == sorted((runs, name) for runs in (10, 100) for name in measures)
    assert all(ms > 0 for ms, _, _ in rows.values())
    # What is written, not how fast: a claim+release and an append write the same few pages at 10
    # runs as at 100, while a save writes the thread.
    assert rows[(10, "claim+release")][2] == rows[(100, "claim+release")][2] > 0
    assert rows[(100, "append")][2] <= rows[(10, "append")][2] * 2
    assert rows[(100, "save")][2] > 3 * rows[(10, "save")][2]


def test_the_http_gap_breakdown_reports_every_kind_and_measure() -> None:
    # (python -m bench.httpgap: where the HTTP path's time goes beyond replay; no timing asserted)
    proc = subprocess.run([sys.executable, "-m", "bench.httpgap", "--tiny", "--growth", "0"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    header, *rows = proc.stdout.strip().splitlines()
    for name in ("replay", "http", "http, no store", "httpx alone", "dump", "encode", "budget", "http / replay"):
        assert name in header
    # (each kind, then the fixed per-run cost, measured on a run of a few events)
    assert [row.split()[0] for row in rows] == [*KINDS, "(fixed)"]
    for row in rows:
        assert row.count(" ms") == 8 and row.split()[-3].endswith("x"), row


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_the_hostile_neighbour_benchmark_runs_every_kind_beside_honest_runs(tmp_path: Path, store: str) -> None:
    # (python -m bench.hostile: one hostile run beside honest ones on one loop; no timing asserted)
    out = tmp_path / "hostile.json"
    proc = subprocess.run([sys.executable, "-m", "bench.hostile", "--tiny", "--store", store, "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    from bench.hostile import KINDS as HOSTILE

    rows = json.loads(out.read_text())
    assert [row["kind"] for row in rows] == ["(none)", *HOSTILE]
    # Every honest event arrived (2 runs of 20 events), and every hostile run ended as it was meant to.
    assert all(row["events"] == 2 * 18 for row in rows)
    assert [row.get("outcome") for row in rows] == [None, *["interrupt" if k == "interrupts" else "success"
                                                            for k in HOSTILE]]


def test_the_concurrency_benchmark_runs_with_its_full_speed_mode_left_out(tmp_path: Path) -> None:
    # ``--n ''`` leaves the full-speed mode out, as the help says; the pool was sized from its largest count
    # and the run ended in ``max()`` of nothing before any row.
    out = tmp_path / "paced.json"
    proc = subprocess.run([sys.executable, "-m", "bench.concurrency", "--n", "", "--paced-n", "2", "--paced-events",
                           "12", "--rate", "200", "--sync-n", "", "--no-idle", "--reps", "1", "--scale", "0.002",
                           "--min-events", "1", "--replay-cpu", "0.01", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    rows = json.loads(out.read_text())["rows"]
    assert {r["mode"] for r in rows} == {"replay", "paced"}
    assert all(r["events"] == [2 * 12] and r["error"] is None for r in rows if r["mode"] == "paced")


def test_the_concurrency_benchmark_refuses_a_count_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    # A count of 0 once reached the sync client's thread pool and ended its rows in a ValueError.
    from bench.concurrency import parse_args

    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--sync-n", "0"])
    assert exit_info.value.code == 2
    assert "counts of 1 or more" in capsys.readouterr().err
    assert parse_args(["--sync-n", ""]).sync_n == []
    assert parse_args(["--idle-n", "100,500"]).idle_n == [100, 500]  # (the idle memory at several counts)


def test_the_inflate_benchmark_times_each_coding_and_loses_no_event_of_a_spoiled_body(tmp_path: Path) -> None:
    # (python -m bench.inflate: a coded body fed one event a read; no timing asserted)
    out = tmp_path / "inflate.json"
    proc = subprocess.run([sys.executable, "-m", "bench.inflate", "--reads", "50", "--rounds", "1",
                           "--against", "agui_client/_inflate.py", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(out.read_text())
    assert list(results) == ["gzip", "deflate"]
    for row in results.values():
        assert list(row) == ["zlib alone", "this", "against", "this, spoiled", "against, spoiled",
                             "this, spoiled, lost", "against, spoiled, lost", "bytes a read"]
        assert row["this, spoiled, lost"] == row["against, spoiled, lost"] == 0
        assert all(row[name] > 0 for name in ("zlib alone", "this", "against", "this, spoiled"))


def test_the_render_benchmark_measures_every_block_and_tail(tmp_path: Path) -> None:
    # (python -m bench.render: what drawing an answer costs the chat; no timing asserted)
    out = tmp_path / "render.json"
    # (--tiny: every kind of block at a hundredth of its size, run here: 0.4 s of CPU where the sizes
    # measured, in a process of their own, took 8)
    from bench.render import blocks, main

    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert main(["--tiny", "--rounds", "1", "--rows", "40", "--json", str(out)]) == 0
    results = json.loads(out.read_text())

    assert list(results["blocks"]) == list(blocks()) and list(results["tails"]) == ["table", "code"]
    assert len(printed.getvalue().splitlines()) == 2 * len(blocks()) + 4  # (a line per row)
    assert all(row["written"] > 0 for row in results["blocks"].values())
    assert all(row["rows"] == 40 and 1 <= row["drawings"] <= 40 for row in results["tails"].values())
    assert list(results["written by the chat"]) == list(results["blocks"])
    assert all(row["written"] > 0 for row in results["written by the chat"].values())
    assert results["idle refreshes"]["refreshes"] == 40 and results["idle refreshes"]["written"] == 0


def test_the_choices_benchmark_reports_each_cost_an_agent_can_choose(tmp_path: Path) -> None:
    # (python -m bench.choices: deep saves and requests, the depth check, a refused patch's undo; no timing asserted)
    out = tmp_path / "choices.json"
    proc = subprocess.run([sys.executable, "-m", "bench.choices", "--tiny", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())
    assert [row["name"] for row in rows] == ["save", "request"] * 3 + ["orjson", "depth", "undo", "undo"]
    assert all(row["cpu_ms"] >= 0 for row in rows)
    assert len(proc.stdout.strip().splitlines()) == len(rows)


def test_the_schema_benchmark_measures_every_hostile_shape_and_the_forms(tmp_path: Path) -> None:
    # (python -m bench.schemas: one hostile responseSchema of each shape, and many ordinary forms in one
    # resume; no timing asserted)
    out = tmp_path / "schemas.json"
    proc = subprocess.run([sys.executable, "-m", "bench.schemas", "--tiny", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    from bench.schemas import hostile_cases

    found = json.loads(out.read_text())
    assert [row["shape"] for row in found["hostile"]] == list(hostile_cases())
    assert all(row["steps"] > 0 and row["bytes"] > 0 for row in found["hostile"])
    assert [row["verdict"] for row in found["forms"]] == ["accepted", "InvalidResumePayload 1 ids"]


def test_the_fixed_load_folds_every_run_of_its_waves_and_counts_calls(tmp_path: Path) -> None:
    # ``python -m bench.fixedload``: the waves it measures are folded whole (each run's events counted),
    # and ``--calls`` profiles those waves alone (the warm-up's are not in the file).
    from bench.fixedload import _by_function, _totals
    from bench.loadserver import chat_events

    per_run = len(chat_events(0.001))
    calls = tmp_path / "calls.prof"
    proc = subprocess.run([sys.executable, "-m", "bench.fixedload", "--n", "3", "--scale", "0.001", "--rounds", "2",
                           "--calls", str(calls), "--top", "3"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(f"{2 * 3 * per_run} events: ")
    import pstats

    profiled = pstats.Stats(str(calls)).stats  # type: ignore[attr-defined]
    sessions = sum(v[1] for (path, _line, name), v in profiled.items()
                   if name == "__init__" and path.endswith(("core/session.py", "core\\session.py")))
    assert sessions == 2 * 3  # (a session for each run of the two measured waves, none for the warm-up's)
    # callgrind_annotate's rows, by function, the file's directories left out
    rows = _by_function("1,234 (12.3%)  /a/b/Python/ceval.c:_PyEval_EvalFrameDefault [/x/lib.so]\n"
                        "  10  /a/Objects/dictobject.c:dict_get\n  5  /b/Objects/dictobject.c:dict_get\n")
    assert rows == {"ceval.c:_PyEval_EvalFrameDefault [lib.so]": 1234, "dictobject.c:dict_get": 15}
    # a callgrind file's totals by event, as ``--cache`` reads them (``totals:`` over ``summary:``)
    out = tmp_path / "callgrind.out"
    out.write_text("version: 1\nevents: Ir D1mr Bcm\nsummary: 9 9 9\nfl=(1) a.c\n0 1 2 3\ntotals: 40 3 7\n")
    assert _totals(out) == {"Ir": 40, "D1mr": 3, "Bcm": 7}
    # (callgrind leaves out the zero counts at a line's end; a file without totals has its summary)
    out.write_text("version: 1\nevents: Ir D1mr Bcm\nfl=(1) a.c\n0 1\nsummary: 40 3\n")
    assert _totals(out) == {"Ir": 40, "D1mr": 3, "Bcm": 0}


def test_the_loop_stall_benchmark_reports_every_phase() -> None:
    # (python -m bench.loopstall: each phase's longest gap between ticks and longest two steps; no timing asserted)
    proc = subprocess.run([sys.executable, "-m", "bench.loopstall", "--forms", "5", "--reps", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    header, *rows = proc.stdout.strip().splitlines()
    assert header == "round 1, 5 forms (ms)"
    assert [row.split("  gap")[0].strip() for row in rows] == [
        "the run bringing the forms", "open_interrupts", "resume_builder()", "answers", "run_until_done(resume=...)"]
    for row in rows:
        assert "loop cpu" in row and "step" in row and "next" in row, row
