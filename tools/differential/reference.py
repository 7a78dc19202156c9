"""The reference differential: fold streams with the reference client and with agui_client, compare.

``python -m tools.differential --oracle DIR [PATH ...] [--gen KIND:SEED:SCALE ...] [--mutate N]``

Each stream (``NAME.jsonl`` with an optional ``NAME.input.json``; ``NAME.sse`` goes through the
oracle's HTTP/SSE path) is folded by the reference (@ag-ui/client 1.0.0 through the shared oracle
``fold.mjs``, run exactly as ``tests/golden/make_golden.py`` runs it) and by ``fold_like_oracle``, and
compared with the golden tests' own comparison (``tests/test_golden.py``: ``mismatches``,
``DIFFERENCES``). One line per stream; exit status 1 when a stream differs in a way ``DIFFERENCES``
does not document for it (or a documented difference is gone, or either side failed to fold).

Node runs one stream at a time, on purpose (the reference's fold is quadratic, the machine shared).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import families, hostile, hostile_golden, integrations, producers, sdkwire

ROOT = Path(__file__).resolve().parents[2]
GEN_KINDS = ("chat", "state", "tools", "snapshot", "mixed", "producers", "families", "integrations", "sdkwire")
DERIVED = "~m"  # a variant of NAME is NAME~mSEED.N


def _load(name: str, path: Path) -> Any:
    """Import a module of the test tree by path (tests/ is not a package)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def golden() -> Any:
    """``tests/test_golden.py``: ``fold_like_oracle``, ``mismatches``, ``DIFFERENCES`` (one comparison for both)."""
    return _load("test_golden", ROOT / "tests" / "test_golden.py")


def make_golden() -> Any:
    """``tests/golden/make_golden.py``: how the oracle is run and its output normalised."""
    return _load("make_golden", ROOT / "tests" / "golden" / "make_golden.py")


@dataclass
class Stream:
    """One stream to compare: its name, its file, its starting thread (``NAME.input.json``), what made it."""

    name: str
    path: Path
    input: Path | None = None
    label: str = ""


@dataclass
class Verdict:
    """How one stream came out: ``status`` is SAME, KNOWN (documented), DIFF, STALE, CRASH or ORACLE."""

    stream: Stream
    status: str
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    ours: dict[str, Any] = field(default_factory=dict)
    reference: dict[str, Any] = field(default_factory=dict)
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.status not in ("SAME", "KNOWN")


# ---------------------------------------------------------------------------------------------------
# Streams


def stream_of(path: Path, label: str = "") -> Stream:
    """The stream in ``path`` with its ``NAME.input.json`` when there is one."""
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    inp = path.with_name(f"{stem}.input.json")
    return Stream(stem if path.suffix == ".jsonl" else path.name, path, inp if inp.exists() else None, label)


def collect(paths: Iterable[Path]) -> list[Stream]:
    """Every ``.jsonl``/``.sse`` stream named, or directly inside a named folder (which must hold one), by name."""
    out: list[Stream] = []
    for path in paths:
        if path.is_dir():
            labels = _manifest(path)
            found = sorted(p for p in path.iterdir() if p.suffix in (".jsonl", ".sse") and p.is_file())
            if not found:
                # A folder is not searched below its top (a corpus keeps its streams there); one with none
                # there added nothing, silently, to a run that looked whole (`tests/golden` for its `streams`).
                raise SystemExit(f"{path}: no .jsonl or .sse stream directly inside (its streams' own folder?)")
            out += [stream_of(p, labels.get(p.name, "")) for p in found]
        elif not path.exists():
            raise SystemExit(f"{path}: no such file or folder")
        elif path.suffix in (".jsonl", ".sse"):
            out.append(stream_of(path, _manifest(path.parent).get(path.name, "")))
        else:
            raise SystemExit(f"{path}: not a .jsonl or .sse stream, nor a folder of them")
    return out


def _manifest(folder: Path) -> dict[str, str]:
    """``MANIFEST.tsv`` of a generated corpus: file name -> what made it."""
    path = folder / "MANIFEST.tsv"
    if not path.exists():
        return {}
    return dict(line.split("\t", 1) for line in path.read_text(encoding="utf-8").splitlines() if "\t" in line)


def generate(folder: Path, sources: list[Stream], gen: list[str], mutate: int, seed: int,
             sse_every: int = 0, only: list[str] | None = None) -> list[Stream]:
    """Write the gen.py streams ``gen`` names (``KIND:SEED:SCALE``) and ``mutate`` variants of every source.

    Variants are derived from the given streams and the generated ones (not from ``.sse`` files);
    with ``sse_every`` K, every K-th variant is written SSE-framed, so it takes the oracle's HTTP path.
    A ``MANIFEST.tsv`` records what made each file. Returns the streams written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Stream] = []
    for spec in gen:
        kind, gseed, scale = _gen_spec(spec)
        if kind in ("producers", "families", "integrations", "sdkwire"):
            # producers.py / families.py / integrations.py / sdkwire.py: SCALE variants of every shape or family
            # (not gen.py); sdkwire's events are JSON texts already written in an SDK's dialect, framed its way
            n = max(1, int(float(scale)))
            made = (producers.streams(gseed, n, sse_every=sse_every) if kind == "producers"
                    else families.streams(gseed, n) if kind == "families"
                    else sdkwire.streams(gseed, n) if kind == "sdkwire" else integrations.streams(gseed, n))
            # (sdkwire's streams carry written lines where the others carry events: each has its own framer)
            frame: Callable[[list[Any], str], str] = sdkwire.frame if kind == "sdkwire" else producers.frame
            for pname, events, inp, framing in made:
                target = folder / (f"{pname}.sse" if framing else f"{pname}.jsonl")
                with open(target, "w", encoding="utf-8", newline="") as out:  # (CRLF framing kept as written)
                    out.write(frame(events, framing) if framing else hostile.dump_lines(events))
                inp_path = None
                if inp is not None:
                    inp_path = folder / f"{pname}.input.json"
                    inp_path.write_text(_input_text(inp), encoding="utf-8")
                label = f"{kind}.py --seed {gseed}" + (f", SSE framed {framing}" if framing else "")
                written.append(Stream(target.name if framing else pname, target, inp_path, label))
            continue
        name = f"gen-{kind}-s{gseed}-x{scale}"
        target = folder / f"{name}.jsonl"
        subprocess.run([sys.executable, str(ROOT / "bench" / "gen.py"), kind, "--seed", str(gseed), "--scale", scale,
                        "-o", str(target)], check=True, capture_output=True)
        written.append(Stream(name, target, None, f"gen.py {kind} --seed {gseed} --scale {scale}"))
    bases = [s for s in [*sources, *written] if s.path.suffix == ".jsonl"]
    count = 0
    for base in bases if mutate else []:
        events = hostile.parse_lines(base.path.read_text(encoding="utf-8"))
        inp = json.loads(base.input.read_text(encoding="utf-8")) if base.input else None
        for n, variant in enumerate(hostile.variants(events, inp, seed, mutate, base.name, only)):
            count += 1
            name = f"{base.name}{DERIVED}{seed}.{n}"
            sse = bool(sse_every) and count % sse_every == 0
            target = folder / (f"{name}.sse" if sse else f"{name}.jsonl")
            text = hostile.dump_lines(variant.events)
            if sse:
                text = "".join(f"data: {line}\n\n" for line in text.splitlines())
            target.write_text(text, encoding="utf-8")
            inp_path = None
            if variant.input is not None:
                inp_path = folder / f"{name}.input.json"
                inp_path.write_text(_input_text(variant.input), encoding="utf-8")
            written.append(Stream(target.name if sse else name, target, inp_path, f"{base.name}: {variant.label}"))
    with open(folder / "MANIFEST.tsv", "a", encoding="utf-8") as manifest:
        for s in written:
            manifest.write(f"{s.path.name}\t{s.label}\n")
    return written


def _input_text(inp: dict[str, Any]) -> str:
    """A starting thread as JSON text (a lone UTF-16 half, which UTF-8 cannot carry, kept as its escape)."""
    text = json.dumps(inp, ensure_ascii=False, indent=1)
    return json.dumps(inp, indent=1) if any("\ud800" <= ch <= "\udfff" for ch in text) else text


def _gen_spec(spec: str) -> tuple[str, int, str]:
    parts = spec.split(":")
    if len(parts) != 3 or parts[0] not in GEN_KINDS:
        raise SystemExit(f"--gen {spec}: want KIND:SEED:SCALE with KIND one of {', '.join(GEN_KINDS)}")
    float(parts[2])
    return parts[0], int(parts[1]), parts[2]


# ---------------------------------------------------------------------------------------------------
# Folding both ways, comparing


def run_reference(oracle: Any, stream: Stream) -> dict[str, Any]:
    """The reference's verdict, normalised as the golden files are (minted ids as ``<uuid:N>``)."""
    mg = make_golden()
    args: list[str] = []
    path, lf_copy = stream.path, None
    if stream.path.suffix == ".sse":
        args += ["--via", "http", "--format", "sse"]
        raw = stream.path.read_bytes()
        if b"\r" in raw:
            # TR-06, a known disagreement (rules.md; bad-inputs B004-B007): SSE lines may end in CRLF or CR
            # (sse_starlette frames with CRLF by default), the reference splits frames on LF LF only and
            # fails the stream. It folds the LF form instead, so the rest of the stream is still compared.
            with tempfile.NamedTemporaryFile("wb", suffix=".sse", delete=False) as out_file:
                out_file.write(raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))
            path = lf_copy = Path(out_file.name)
    if stream.input is not None:
        args += ["--input", str(stream.input)]
    try:
        out = oracle.run(*args, str(path))
    finally:
        if lf_copy is not None:
            lf_copy.unlink()
    oracle.check_versions(out)
    source = stream.path.read_text(encoding="utf-8", errors="surrogateescape")
    if stream.input is not None:
        source += stream.input.read_text(encoding="utf-8")
    normalised: dict[str, Any] = mg.normalise_minted_ids(mg.trim(out), source)
    return normalised


def run_ours(stream: Stream) -> dict[str, Any]:
    """Our fold, as the golden tests fold (``fold_like_oracle``)."""
    seed = json.loads(stream.input.read_text(encoding="utf-8")) if stream.input is not None else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fold's warnings are not compared (their wording is ours alone)
        result: dict[str, Any] = golden().fold_like_oracle(stream.path, seed)
    return result


def judge(stream: Stream, ours: dict[str, Any], reference: dict[str, Any],
          refold: Callable[[Stream], dict[str, Any]] | None = None) -> Verdict:
    """Compare the two folds as ``tests/test_golden.py`` does; ``DIFFERENCES`` applies by stream name.

    ``refold`` folds a stream with the reference (``run_reference``); without it, the fields that follow
    from a documented verdict are accepted only where the reference refused a JSONL stream (see
    ``_after_the_verdict``).
    """
    g = golden()
    found = g.mismatches(ours, reference)
    allowed, why = g.DIFFERENCES.get(stream.name, (frozenset(), ""))
    if ours.get("ok") and reference.get("ok") and "newMessages" in reference and "newMessageIds" in ours \
            and "messages" not in found:
        # The run's new messages, as sets (ours in the order the run added them, the reference's in the
        # thread's), as tests/test_golden.py compares them; only where the messages agree (a difference in
        # the messages is one in the new messages too).
        theirs = g._minted_ids([m["id"] for m in reference["newMessages"]], ours["newMessageIds"], {})
        if sorted(theirs) != sorted(ours["newMessageIds"]):
            found["newMessages"] = {"ours": ours["newMessageIds"], "reference": theirs}
    derived_from = stream.name.split(DERIVED, 1)[0]
    inherited = not allowed and derived_from != stream.name and derived_from in g.DIFFERENCES
    if inherited:
        # A variant of a golden stream keeps that stream's documented difference (a mutation may also
        # take it away: not a stale entry, then).
        allowed, why = g.DIFFERENCES[derived_from]
        why = f"as {derived_from}: {why}"
    elif not allowed and _made_to_meet(stream.name) in g.DIFFERENCES:
        # A producer shape or family made to meet a documented difference (producers.DOCUMENTED,
        # families.DOCUMENTED, integrations.DOCUMENTED), and its variants.
        documented = str(_made_to_meet(stream.name))
        allowed, why = g.DIFFERENCES[documented]
        why, inherited = f"as {documented} (producer shape): {why}", True
    events, inp = _events(stream) if mutations(stream) else (None, None)
    # (without the variant's events the situation a golden stream pins cannot be checked: nothing is allowed)
    declared = hostile_golden.documented(mutations(stream), events, inp) if events is not None else {}
    meets = {label: [d for d in names if d in g.DIFFERENCES and g.DIFFERENCES[d][0] & (set(found) - allowed)]
             for label, names in declared.items()}
    meets = {label: names for label, names in meets.items() if names}
    if meets:
        # A hostile mutation that meets a documented difference wherever the stream lets it (hostile_golden.DOCUMENTED):
        # the fields of the golden streams that document it, and no others, may differ (or not).
        allowed = allowed | frozenset().union(*(g.DIFFERENCES[d][0] for names in meets.values() for d in names))
        parts = [why] if why else []
        parts += [f"{label} as {' or '.join(names)}" for label, names in meets.items()]
        why = "; ".join(parts)
        inherited = True
    deliberate = _refused_deliberately(ours, reference)
    if deliberate:
        # A resume we refuse before sending and the reference sends (tests/core/test_resume_oracle.py
        # DELIBERATE: a payload its responseSchema refuses, an entry naming no open interrupt, ...): our
        # thread is the starting one, the reference's what the run made of it, so every field may differ.
        allowed = allowed | frozenset(found)
        parts = [why] if why else []
        parts += [f"resume refused as golden resume/{case}: {reason}" for case, reason in deliberate.items()]
        why, inherited = "; ".join(parts), True
    if stream.path.suffix == ".sse" and not reference.get("ok") and not ours.get("ok"):
        # On the HTTP path the reference's error overtakes its queued fold, so a rejected stream leaves
        # nothing of what preceded it (the oracle's README; golden: payload-not-json, B071): only the
        # verdict can be compared.
        partial = {"messages", "state", "pendingInterrupts"}
        allowed = allowed | (partial & set(found))
        why = why or "HTTP path: the reference keeps nothing of a stream it rejects (B071, payload-not-json)"
        inherited = True
    unexpected = set(found) - allowed
    if unexpected:
        follows, because = _after_the_verdict(stream, ours, reference, unexpected, refold)
        if follows:
            allowed = allowed | follows
            why = "; ".join(part for part in (why, because) if part)
            inherited = True
            unexpected -= follows
    if unexpected:
        return Verdict(stream, "DIFF", {k: found[k] for k in sorted(unexpected)}, ours, reference)
    stale = allowed - set(found)
    if stale and not inherited:
        return Verdict(stream, "STALE", {}, ours, reference, f"documented differences gone: {sorted(stale)}")
    if found:
        return Verdict(stream, "KNOWN", found, ours, reference, why)
    return Verdict(stream, "SAME", {}, ours, reference)


def _documented_verdict(stream: Stream) -> str | None:
    """The golden stream whose documented difference is the verdict (``ok``) that ``stream`` is judged by:
    the stream itself, the golden stream a variant came from, or the one a generated shape was made to meet."""
    documented = golden().DIFFERENCES
    derived_from = stream.name.split(DERIVED, 1)[0]
    for name in (stream.name, derived_from, _made_to_meet(stream.name)):
        if name in documented:
            return name if "ok" in documented[name][0] else None
    return None


def _payload_lines(stream: Stream) -> list[str] | None:
    """The JSON text of each event of ``stream``, as written; ``None`` for an SSE stream whose events are
    not one ``data:`` line each (only a variant's framing is known to be)."""
    try:
        text = stream.path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
    if stream.path.suffix != ".sse":
        return [line for line in text.split("\n") if line.strip()]  # (as the reference's JSONL reader counts)
    if DERIVED not in stream.name:
        return None
    return [line[len("data:"):].strip() for line in text.splitlines() if line.startswith("data:")]


def _prefix(stream: Stream, lines: list[str], folder: Path) -> Stream:
    """The JSONL stream of ``lines`` (a prefix of ``stream``'s events) with ``stream``'s starting thread."""
    path = folder / f"{stream.name}.prefix.jsonl"
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8", errors="surrogateescape")
    return Stream(stream.name, path, stream.input, stream.label)


def _refused_at(fold: dict[str, Any]) -> int | None:
    """The index of the event the reference refused (a line that is not JSON, or the event it was applying)."""
    parse_error = fold.get("parseError")
    index = parse_error.get("index") if isinstance(parse_error, dict) else fold.get("lastEventIndex")
    return index if isinstance(index, int) else None


def _after_the_verdict(stream: Stream, ours: dict[str, Any], reference: dict[str, Any], unexpected: set[str],
                       refold: Callable[[Stream], dict[str, Any]] | None) -> tuple[frozenset[str], str]:
    """Which ``unexpected`` fields follow from a documented verdict, and why.

    A golden stream whose documented difference is the verdict (``usage-object``: we apply the run, the
    reference refuses it) is refused by one client at one event; a variant of it (a run split off after
    it, an event moved behind it) carries on past that event in the other client, and every field the
    later events change differs too. Those fields follow from the verdict, and only those: the client
    that went on is folded again up to the event the other refused (ours on the stream's first events;
    the reference through ``refold``), and a field that still differs there is a difference of its own.
    Only for the documented direction (the side the golden file has refusing refuses).
    """
    documented = _documented_verdict(stream)
    if documented is None or bool(ours.get("ok")) == bool(reference.get("ok")):
        return frozenset(), ""
    expected = json.loads((ROOT / "tests" / "golden" / "streams" / f"{documented}.expected.json").read_text())
    if bool(reference.get("ok")) != bool(expected.get("ok")):
        return frozenset(), ""
    lines = _payload_lines(stream)
    if lines is None:
        return frozenset(), ""
    g = golden()
    with tempfile.TemporaryDirectory(prefix="agui-verdict-") as scratch:
        if not reference.get("ok"):
            refused = reference
            if stream.path.suffix == ".sse":
                # (the HTTP path keeps nothing of a refused stream, B071: its events folded directly say
                # where the reference refused and what it held there)
                if refold is None:
                    return frozenset(), ""
                refused = refold(_prefix(stream, lines, Path(scratch)))
                if refused.get("ok"):
                    return frozenset(), ""
            at = _refused_at(refused)
            if at is None:
                return frozenset(), ""
            seed = json.loads(stream.input.read_text(encoding="utf-8")) if stream.input is not None else {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cut = g.fold_like_oracle(_prefix(stream, lines[:at], Path(scratch)).path, seed)
            remaining = g.mismatches(cut, refused)
            side = "the reference"
        else:
            at = ours.get("errorIndex")
            if refold is None or not isinstance(at, int):
                return frozenset(), ""
            remaining = g.mismatches(ours, refold(_prefix(stream, lines[:at], Path(scratch))))
            side = "ours"
    follows = frozenset(field for field in unexpected if field not in remaining and field != "ok")
    if not follows:
        return frozenset(), ""
    return follows, (f"{', '.join(sorted(follows))} after {side} refused event {at}, as {documented} "
                     f"(both folds agree up to it)")


# A kind of resume problem (ResumeRefused.problems) -> the golden resume case showing that we refuse it and the
# reference does not (tests/core/test_resume_oracle.py DELIBERATE, which says why).
RESUME_REFUSALS = {"invalid": "resume-payload-fails-schema", "unknown": "resume-unknown-id",
                   "duplicate": "resume-duplicate-id", "nothing": "no-pending-with-resume"}


def resume_oracle() -> Any:
    """``tests/core/test_resume_oracle.py``: ``DELIBERATE``, the resumes we refuse and the reference sends."""
    return _load("test_resume_oracle", ROOT / "tests" / "core" / "test_resume_oracle.py")


def _refused_deliberately(ours: dict[str, Any], reference: dict[str, Any]) -> dict[str, str]:
    """Golden resume case -> reason, when we refused the resume for documented reasons only and the reference ran."""
    kinds = ours.get("refusedFor") or []
    if not ours.get("refused") or not reference.get("ok") or not all(k in RESUME_REFUSALS for k in kinds):
        return {}
    deliberate: dict[str, str] = resume_oracle().DELIBERATE
    return {RESUME_REFUSALS[k]: deliberate[RESUME_REFUSALS[k]] for k in kinds
            if RESUME_REFUSALS[k] in deliberate}


def _made_to_meet(name: str) -> str | None:
    """The golden stream whose documented difference the generated stream ``name`` may show, if any."""
    return (producers.documented(name) or families.documented(name) or integrations.documented(name)
            or sdkwire.documented(name))


def mutations(stream: Stream) -> list[str]:
    """The hostile mutations a variant (``NAME~mSEED.N``) carries, from its label (``BASE: m1+m2``); else none."""
    if DERIVED not in stream.name or ": " not in stream.label:
        return []
    return stream.label.split(": ", 1)[1].split("+")


def _events(stream: Stream) -> tuple[list[Any] | None, dict[str, Any] | None]:
    """A variant's events and starting thread, as ``hostile`` writes them (``None``: the file is not there)."""
    try:
        text = stream.path.read_text(encoding="utf-8", errors="surrogateescape")
        inp = json.loads(stream.input.read_text(encoding="utf-8")) if stream.input is not None else None
    except (OSError, ValueError):
        return None, None
    if stream.path.suffix == ".sse":  # (a variant is written one ``data:`` line per event)
        text = "\n".join(line[len("data:"):].strip() for line in text.splitlines() if line.startswith("data:"))
    return hostile.parse_lines(text), inp


def compare(oracle: Any, stream: Stream) -> Verdict:
    """Fold ``stream`` both ways and judge; a failure of either fold is a verdict too."""
    mg = make_golden()
    try:
        reference = run_reference(oracle, stream)
    except mg.OracleFailure as exc:
        return Verdict(stream, "ORACLE", detail=str(exc)[:500])
    try:
        ours = run_ours(stream)
    except Exception as exc:  # noqa: BLE001 - a crash of our client is the finding itself
        return Verdict(stream, "CRASH", reference=reference, detail=f"{type(exc).__name__}: {exc}"[:500])
    return judge(stream, ours, reference, lambda prefix: run_reference(oracle, prefix))


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, as ``/pointer: a != b`` lines (``a`` and ``b`` abbreviated)."""
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                       and not isinstance(a, bool) and not isinstance(b, bool)):
        return [f"{path or '/'}: {a!r:.300} != {b!r:.300}"]
    if isinstance(a, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                out.append(f"{path}/{key}: only in {'the second' if key in b else 'the first'}")
            else:
                out += differences(a[key], b[key], f"{path}/{key}")
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path or '/'}: {len(a)} items != {len(b)} items: {a!r:.300} != {b!r:.300}"]
        return [d for x, y, i in zip(a, b, range(len(a)), strict=True) for d in differences(x, y, f"{path}/{i}")]
    return [] if a == b else [f"{path or '/'}: {a!r:.300} != {b!r:.300}"]


def report(verdict: Verdict, limit: int = 6) -> list[str]:
    """The line for one stream, then (when it failed) the differing fields, ours first."""
    ref, ours = verdict.reference, verdict.ours
    head = f"{verdict.status:<6} {verdict.stream.name}"
    if ref:
        head += f"  reference: {'ok' if ref.get('ok') else 'rejected'} {ref.get('outcome') or ''}".rstrip()
    if ours:
        head += f" | ours: {'ok' if ours.get('ok') else 'rejected'} {ours.get('outcome') or ''}".rstrip()
    if verdict.fields:
        head += f"  [{', '.join(verdict.fields)}]"
    if verdict.stream.label:
        head += f"  ({verdict.stream.label})"
    lines = [head]
    if verdict.status == "KNOWN":
        return lines
    if verdict.detail:
        lines.append(f"    {verdict.detail}")
    for key, pair in verdict.fields.items():
        found = differences(pair["ours"], pair["reference"], f"/{key}")
        lines += [f"    ours != reference at {line}" for line in found[:limit]]
        if len(found) > limit:
            lines.append(f"    ... {len(found) - limit} more under /{key}")
    for side, out in (("reference", ref), ("ours", ours)):
        if verdict.failed and out.get("error"):
            lines.append(f"    {side} error: {' '.join(str(out['error']).split())[:200]}")
    return lines


def summary(verdicts: list[Verdict]) -> str:
    """One line: how many streams, how many of each status."""
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.status] = counts.get(v.status, 0) + 1
    order = ("SAME", "KNOWN", "DIFF", "STALE", "CRASH", "ORACLE")
    return f"{len(verdicts)} streams: " + ", ".join(f"{counts[s]} {s.lower()}" for s in order if s in counts)


def _save(folder: Path, verdict: Verdict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for side, out in (("ours", verdict.ours), ("reference", verdict.reference)):
        (folder / f"{verdict.stream.name}.{side}.json").write_text(
            json.dumps(out, indent=1, ensure_ascii=True, default=str), encoding="utf-8")


def run(args: Any) -> int:
    """The ``--oracle`` / ``--corpus`` mode of ``python -m tools.differential`` (arguments parsed there)."""
    sources = collect(Path(p) for p in args.paths)
    temporary = None
    if args.gen or args.mutate:
        if args.corpus:
            folder = Path(args.corpus)
        else:
            temporary = tempfile.mkdtemp(prefix="agui-reference-")
            folder = Path(temporary)
        only = [m for m in args.mutations.split(",") if m] if args.mutations else None
        try:
            made = generate(folder, sources, args.gen, args.mutate, args.seed, args.sse_every, only)
        except ValueError as exc:
            raise SystemExit(f"--mutations: {exc}") from exc
        print(f"{len(made)} streams written to {folder}", file=sys.stderr)
    else:
        made = []
    try:
        if not args.oracle:
            return 0
        streams = made if args.skip_sources else [*sources, *made]
        oracle = make_golden().Oracle(Path(args.oracle).resolve(), args.node)
        verdicts = []
        for stream in streams:
            verdict = compare(oracle, stream)
            verdicts.append(verdict)
            if verdict.status != "SAME" or not args.quiet:
                print("\n".join(report(verdict)), flush=True)
            if args.save and verdict.status != "SAME":
                _save(Path(args.save), verdict)
        print(summary(verdicts))
        return 1 if any(v.failed for v in verdicts) else 0
    finally:
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)

