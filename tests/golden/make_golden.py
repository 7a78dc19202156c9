#!/usr/bin/env python3
"""Regenerate the golden conformance vectors from the reference AG-UI client.

The reference is the TypeScript client (@ag-ui/client 1.0.0 / @ag-ui/core 1.0.0)
wrapped as a command-line oracle (``fold.mjs``, installed with ``npm ci`` in a
copy of the shared ``oracle`` directory).  This script only drives that oracle
and stores its answers; it never interprets them.

    python tests/golden/make_golden.py --oracle "$TMPDIR"/agui-oracle
    python tests/golden/make_golden.py --oracle DIR --fixtures .../ag_ui_validate/spec/fixtures
    python tests/golden/make_golden.py --oracle DIR --only streams,resume --check
    python tests/golden/make_golden.py --oracle DIR --only streams,resume --name NAME   # one new case

Sections (``--only``, comma separated; default all):

  streams   streams/NAME.jsonl (+ NAME.input.json)  -> streams/NAME.expected.json
  validate  ag-ui-validate 0.4.0 fixtures          -> validate/{valid,invalid}/NAME.expected.json
  gen       bench/gen.py KIND (fixed seed/scale)    -> gen/KIND.expected.json   (--summary)
  resume    resume/NAME.json ``case``               -> resume/NAME.json ``oracle``

``--check`` computes everything and compares it with the stored files instead of
writing (exit status 1 on any difference).  Standard library only.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
GEN_PY = REPO / "bench" / "gen.py"

# Keys of the oracle output that depend on the machine or the run, not on the stream.
DROP_KEYS = ("timing", "oracle", "logs", "logCount")

EXPECTED_PACKAGES = {"client": "@ag-ui/client@1.0.0", "core": "@ag-ui/core@1.0.0"}

# gen.py arguments: kind -> (seed, scale).  Tests regenerate the same bytes.
GEN_CASES = {
    "chat": (7, 0.01),
    "tools": (7, 0.01),
    "state": (7, 0.01),
    "snapshot": (7, 0.05),
    "mixed": (7, 0.05),
}

ORACLE_TIMEOUT_MS = 120_000


class OracleFailure(Exception):
    pass


def dump_json(value) -> str:
    """Pretty JSON, UTF-8 text; lone UTF-16 surrogates written as \\uXXXX escapes."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def trim(out: dict) -> dict:
    return {k: v for k, v in out.items() if k not in DROP_KEYS}


UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def normalise_minted_ids(value, source_text: str):
    """Replace uuids the reference minted (absent from the input) by "<uuid:N>".

    The reference mints a random uuid where the stream names no id (e.g. the
    reasoning message a legacy THINKING_TEXT_MESSAGE_START becomes).  Numbered in
    order of first appearance, so equal N means the same minted id.
    """
    seen: dict[str, str] = {}

    def fix(s: str) -> str:
        def sub(m):
            u = m.group(0)
            if u in source_text:
                return u
            return seen.setdefault(u, f"<uuid:{len(seen) + 1}>")

        return UUID_RE.sub(sub, s)

    def walk(v):
        if isinstance(v, str):
            return fix(v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {fix(k): walk(x) for k, x in v.items()}
        return v

    return walk(value)


class Oracle:
    def __init__(self, directory: Path, node: str) -> None:
        self.fold = directory / "fold.mjs"
        if not self.fold.is_file():
            raise SystemExit(f"no fold.mjs in {directory}")
        if not (directory / "node_modules").is_dir():
            raise SystemExit(f"{directory} has no node_modules: run `npm ci` there first")
        self.node = node

    def run(self, *args: str) -> dict:
        cmd = [self.node, str(self.fold), "--timeout-ms", str(ORACLE_TIMEOUT_MS), *args]
        env = dict(os.environ)
        env.pop("NODE_ENV", None)  # development/test change the reference's behaviour
        env["TZ"] = "UTC"  # the reference reads an offset-less expiresAt as host-local time
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=ORACLE_TIMEOUT_MS / 1000 + 60, env=env)
        except subprocess.TimeoutExpired as e:
            raise OracleFailure(f"timed out: {' '.join(cmd)}") from e
        try:
            out = json.loads(proc.stdout.decode("utf-8"))
        except ValueError as e:
            raise OracleFailure(
                f"exit {proc.returncode}, no JSON on stdout: {' '.join(cmd)}\n"
                f"{proc.stderr.decode(errors='replace')[:2000]}"
            ) from e
        if proc.returncode != 0 or out.get("oracleError"):
            raise OracleFailure(f"exit {proc.returncode}: {out.get('error')} ({' '.join(cmd)})")
        return out

    def check_versions(self, out: dict) -> None:
        info = out.get("oracle") or {}
        for key, want in EXPECTED_PACKAGES.items():
            if info.get(key) != want:
                raise SystemExit(f"oracle reports {key}={info.get(key)!r}, golden files are for {want}")


# ---------------------------------------------------------------------------
# Jobs: each returns (target path, text) or raises OracleFailure.


def job_stream(oracle: Oracle, stream: Path):
    args = []
    inp = stream.with_name(stream.name[: -len(".jsonl")] + ".input.json")
    if inp.exists():
        args += ["--input", str(inp)]
    out = oracle.run(*args, str(stream))
    oracle.check_versions(out)
    target = stream.with_name(stream.name[: -len(".jsonl")] + ".expected.json")
    source = stream.read_text(encoding="utf-8") + (inp.read_text(encoding="utf-8") if inp.exists() else "")
    return target, dump_json(normalise_minted_ids(trim(out), source))


def job_fixture(oracle: Oracle, group: str, name: str, path: Path):
    if path.name == "scenario.json":
        out = oracle.run("--via", "http", "--format", "scenario", str(path))
    else:
        out = oracle.run(str(path))
    oracle.check_versions(out)
    doc = normalise_minted_ids(trim(out), path.read_text(encoding="utf-8"))
    return HERE / "validate" / group / f"{name}.expected.json", dump_json(doc)


def job_gen(oracle: Oracle, kind: str, tmp: Path):
    seed, scale = GEN_CASES[kind]
    stream = tmp / f"{kind}.jsonl"
    subprocess.run(
        [sys.executable, str(GEN_PY), kind, "--seed", str(seed), "--scale", str(scale), "-o", str(stream)],
        check=True,
        capture_output=True,
    )
    out = oracle.run("--summary", str(stream))
    oracle.check_versions(out)
    minted = normalise_minted_ids(trim(out), stream.read_text(encoding="utf-8"))
    doc = {"gen": {"kind": kind, "seed": seed, "scale": scale}, **minted}
    return HERE / "gen" / f"{kind}.expected.json", dump_json(doc)


def job_resume(oracle: Oracle, case_file: Path, tmp: Path):
    doc = json.loads(case_file.read_text(encoding="utf-8"))
    case = doc["case"]
    if "now" not in case:
        raise OracleFailure(f"{case_file.name}: a resume case must pin \"now\"")
    spec = tmp / f"resume-{case_file.stem}.json"
    spec.write_text(json.dumps(case, ensure_ascii=False), encoding="utf-8")
    out = oracle.run("--check-resume", str(spec))
    return case_file, dump_json({"case": case, "oracle": trim(out)})


# ---------------------------------------------------------------------------


def find_fixtures(given: str | None) -> Path:
    if given:
        return Path(given)
    spec = importlib.util.find_spec("ag_ui_validate")
    if spec is None or not spec.origin:
        raise SystemExit("ag-ui-validate is not installed: pass --fixtures DIR (ag_ui_validate/spec/fixtures)")
    return Path(spec.origin).parent / "spec" / "fixtures"


def fixture_jobs(fixtures: Path):
    jobs = []
    for p in sorted((fixtures / "valid").glob("*.jsonl")):
        jobs.append(("valid", p.name[: -len(".jsonl")], p))
    for d in sorted(p for p in (fixtures / "invalid").iterdir() if p.is_dir()):
        if (d / "stream.jsonl").exists():
            jobs.append(("invalid", d.name, d / "stream.jsonl"))
        elif (d / "scenario.json").exists():
            jobs.append(("invalid", d.name, d / "scenario.json"))
        else:
            raise SystemExit(f"fixture {d} has neither stream.jsonl nor scenario.json")
    return jobs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--oracle", required=True, help="directory holding fold.mjs with node_modules installed")
    ap.add_argument("--fixtures", help="ag_ui_validate/spec/fixtures (default: from the installed ag-ui-validate)")
    ap.add_argument("--node", default="node", help="node executable (default: node)")
    ap.add_argument("--only", default="streams,validate,gen,resume", help="sections to (re)generate")
    ap.add_argument("--jobs", type=int, default=max(2, (os.cpu_count() or 2)), help="parallel oracle runs")
    ap.add_argument("--check", action="store_true", help="compare with the stored files, write nothing")
    ap.add_argument("--name", action="append", default=[], metavar="NAME",
                    help="only streams/NAME.jsonl and resume/NAME.json (repeatable; orphans are then not looked for)")
    args = ap.parse_args()

    sections = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = sections - {"streams", "validate", "gen", "resume"}
    if unknown:
        ap.error(f"unknown section(s): {', '.join(sorted(unknown))}")

    if args.name:
        known = {p.name[: -len(".jsonl")] for p in (HERE / "streams").glob("*.jsonl")}
        known |= {p.stem for p in (HERE / "resume").glob("*.json")}
        missing = set(args.name) - known
        if missing:
            ap.error(f"no such stream or resume case: {', '.join(sorted(missing))}")

    oracle = Oracle(Path(args.oracle).resolve(), args.node)
    tmpdir = tempfile.TemporaryDirectory(prefix="agui-golden-")
    tmp = Path(tmpdir.name)

    work = []  # (label, callable)
    expected_targets: dict[str, set[Path]] = {}
    if "streams" in sections:
        streams = sorted((HERE / "streams").glob("*.jsonl"))
        if args.name:
            streams = [s for s in streams if s.name[: -len(".jsonl")] in args.name]
        for s in streams:
            work.append((f"streams/{s.name}", lambda s=s: job_stream(oracle, s)))
        expected_targets["streams"] = {s.with_name(s.name[:-6] + ".expected.json") for s in streams}
    if "validate" in sections:
        fjobs = fixture_jobs(find_fixtures(args.fixtures))
        for group, name, path in fjobs:
            work.append((f"validate/{group}/{name}", lambda g=group, n=name, p=path: job_fixture(oracle, g, n, p)))
        expected_targets["validate"] = {HERE / "validate" / g / f"{n}.expected.json" for g, n, _ in fjobs}
    if "gen" in sections:
        for kind in GEN_CASES:
            work.append((f"gen/{kind}", lambda k=kind: job_gen(oracle, k, tmp)))
    if "resume" in sections:
        for c in sorted((HERE / "resume").glob("*.json")):
            if args.name and c.stem not in args.name:
                continue
            work.append((f"resume/{c.name}", lambda c=c: job_resume(oracle, c, tmp)))

    failures, changed, written = [], [], 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(fn): label for label, fn in work}
        results = []
        for fut in concurrent.futures.as_completed(futures):
            label = futures[fut]
            try:
                results.append((label, *fut.result()))
            except OracleFailure as e:
                failures.append((label, str(e)))
    for label, target, text in sorted(results):
        old = target.read_text(encoding="utf-8") if target.exists() else None
        if old == text:
            continue
        changed.append(label)
        if not args.check:
            write_text(target, text)
            written += 1

    # Stored expectations whose source is gone.
    orphans = []
    if "streams" in expected_targets and not args.name:
        orphans += [p for p in (HERE / "streams").glob("*.expected.json") if p not in expected_targets["streams"]]
    if "validate" in expected_targets:
        orphans += [p for p in (HERE / "validate").glob("*/*.expected.json") if p not in expected_targets["validate"]]

    print(f"{len(work)} oracle runs, {len(changed)} {'differ' if args.check else 'changed'}, {len(failures)} failed")
    for label in changed:
        print(f"  {'DIFFERS' if args.check else 'wrote'}: {label}")
    for p in orphans:
        print(f"  orphan (no source): {p.relative_to(HERE)}")
    for label, msg in failures:
        print(f"  ORACLE FAILED: {label}: {msg}", file=sys.stderr)
    tmpdir.cleanup()
    if failures or (args.check and (changed or orphans)):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
