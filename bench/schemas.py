"""What checking answers against agents' ``responseSchema``s costs: ``python -m bench.schemas``.

Two questions, one table each:

* **one hostile schema**: for each shape that makes a JSON Schema check do more work than its size
  suggests (regex patterns, ``$ref`` chains, ``allOf``/``anyOf`` fan-out, ``enum``/``const`` on large
  values, ``uniqueItems``, ``multipleOf`` on extreme numbers, patterns as property names, ``dependentSchemas``,
  ``if``/``then``, a schema of many subschemas), checking one answer against it, judged afresh: the
  time, the steps charged (``agui_client.core.schema``'s budget), the time per step and per byte of
  the schema's JSON text, and the verdict (``ok``, ``errors`` or the fault's code);
* **many ordinary forms**: one resume answering ``--forms`` interrupts, each with its own 50-field
  form schema (distinct titles, names and descriptions, so no judgment is shared), answered validly,
  then with one field wrong in the last one: the time of ``ResumeBuilder.build()`` and its verdict;
* **one hostile response**: a ``RUN_FINISHED`` of ``--response-mib`` MiB of schemas that multiply
  their work, each padded to a million characters (the most one schema may hold) so that its text buys
  it a million steps: the time a ``RunSession`` takes to fold the event and its verdict, then the time,
  steps and verdict of the resume answering every interrupt (the client's default ``max_schema_steps``).

``--tiny`` runs it all at small sizes in a second or two (what ``tests/test_bench_smoke.py`` runs).
Times are for one machine, loaded by whatever else runs on it (the report starts with the load
average); compare the rows of one run.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from agui_client.core import schema as schema_module  # noqa: E402
from agui_client.core.interrupts import ResumeBuilder  # noqa: E402
from agui_client.core.session import RunSession  # noqa: E402
from agui_client.errors import ProtocolError, ResumeRefused  # noqa: E402
from agui_client.types.run import Interrupt  # noqa: E402

Case = tuple[Any, Any]


def _doubling(levels: int, leaf: Any, combine: str = "allOf") -> dict[str, Any]:
    defs: dict[str, Any] = {"d0": leaf}
    for n in range(1, levels + 1):
        defs[f"d{n}"] = {combine: [{"$ref": f"#/$defs/d{n - 1}"}, {"$ref": f"#/$defs/d{n - 1}"}]}
    return {"$defs": defs, "$ref": f"#/$defs/d{levels}"}


def _nested(levels: int, leaf: Any) -> Any:
    for _ in range(levels):
        leaf = {"a": leaf}
    return leaf


def hostile_cases(scale: float = 1.0) -> dict[str, Callable[[], Case]]:
    """Each hostile shape: a function making ``(schema, answer)`` at ``scale`` (1: as large as helps it)."""

    def n(count: int) -> int:
        return max(2, int(count * scale))

    return {
        "pattern: long answer, big pattern": lambda: (
            {"type": "string", "pattern": "^(" + "|".join(f"[a-z]{{{k}}}x" for k in range(1, 200)) + ")+$"},
            "a" * n(1_000_000)),
        "pattern: 17 patterns on many keys": lambda: (
            {"patternProperties": {f"^k{p}.*[0-9]{{3,40}}": {} for p in range(17)}},
            {f"k{k % 17}{'x' * 60}{k}": 0 for k in range(n(20_000))}),
        "patternProperties: 2,000 patterns judged": lambda: (
            {"patternProperties": {f"^(a|b{p})*[c-z]{{2,{p % 50 + 2}}}$": {} for p in range(n(2_000))}}, {}),
        "$ref: chain through 60 definitions": lambda: (
            {"$defs": {f"d{k}": {"$ref": f"#/$defs/d{k + 1}"} for k in range(60)} | {"d60": {"type": "integer"}},
             "type": "array", "items": {"$ref": "#/$defs/d0"}}, list(range(n(20_000)))),
        "$ref: doubling allOf": lambda: (_doubling(30, {"type": "string"}), "x"),
        "anyOf: 1,000 failing branches": lambda: ({"anyOf": [{"type": "integer"}] * 1000}, "y" * n(100_000)),
        "allOf: per level of the answer": lambda: (
            {"allOf": [{"properties": {"a": {"$ref": "#"}}}, {"properties": {"a": {"$ref": "#"}}}]},
            _nested(40, "x")),
        "enum: 3,000 objects": lambda: (
            {"enum": [{"a": k, "b": [k, k]} for k in range(n(3_000))]}, {"a": -1, "b": [0, 0]}),
        "const: large value, large answer": lambda: (
            {"const": [[k, k] for k in range(n(6_000))]}, [[k, k] for k in range(n(6_000))]),
        "uniqueItems: 20,000 objects": lambda: (
            {"uniqueItems": True}, [{"a": k, "b": [k]} for k in range(n(20_000))]),
        "multipleOf: huge and tiny": lambda: (
            {"type": "array", "items": {"multipleOf": 1e-308}}, [10 ** 300 + k for k in range(n(5_000))]),
        "dependentSchemas: doubling": lambda: (
            {"$defs": {f"d{k}": {"dependentSchemas": {"a": {"$ref": f"#/$defs/d{k - 1}"},
                                                        "b": {"$ref": f"#/$defs/d{k - 1}"}}}
                       for k in range(1, 40)} | {"d0": {}},
             "unevaluatedProperties": False, "$ref": "#/$defs/d39"}, {"a": 1, "b": 1}),
        "if/then: nested per level": lambda: (
            {"if": {"$ref": "#"}, "then": {"$ref": "#"}, "properties": {"a": {"$ref": "#"}}}, _nested(30, "x")),
        "many subschemas (judging)": lambda: (
            {"properties": {f"p{k}": {"type": "string", "minLength": 1} for k in range(n(5_000))}}, {}),
    }


def form_schema(number: int, fields: int = 50) -> dict[str, Any]:
    """An ordinary form, as an agent asking for details would send it: ``fields`` fields of a few kinds."""
    properties: dict[str, Any] = {}
    for k in range(fields):
        kind = k % 5
        name = f"form{number}_field{k}"
        if kind == 0:
            field: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 200}
        elif kind == 1:
            field = {"type": "integer", "minimum": 0, "maximum": 10_000}
        elif kind == 2:
            field = {"type": "string", "enum": ["low", "medium", "high"]}
        elif kind == 3:
            field = {"type": "boolean", "default": False}
        else:
            field = {"type": "string", "format": "email", "pattern": "^[^@ ]+@[^@ ]+$"}
        properties[name] = {"title": f"Field {k} of form {number}", "description": f"what field {k} asks", **field}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": f"Form {number}",
            "type": "object", "properties": properties, "required": list(properties)[:10],
            "additionalProperties": False}


def form_answer(number: int, fields: int = 50) -> dict[str, Any]:
    """A valid answer to :func:`form_schema`."""
    values = ["some text", 42, "medium", True, "someone@example.org"]
    return {f"form{number}_field{k}": values[k % 5] for k in range(fields)}


def _verdict(found: schema_module.Verdict) -> str:
    if found.fault is not None:
        return f"{found.fault.code} at {found.fault.pointer or '/'}"
    return f"{len(found.errors)} errors" if found.errors else "ok"


def _allowance(schema: Any, answer: Any) -> Any:
    """What a resume answering one interrupt may spend (also before the twenty-fourth round, whose
    ``shared_allowance`` took the answers alone, so ``--against``-style comparisons can run this file
    over an older checkout)."""
    if "checks" in inspect.signature(schema_module.shared_allowance).parameters:
        return schema_module.shared_allowance([(schema, answer)])
    return schema_module.shared_allowance([answer])


def measure_hostile(scale: float) -> list[dict[str, Any]]:
    rows = []
    for name, make in hostile_cases(scale).items():
        schema, answer = make()
        size = len(json.dumps(schema, separators=(",", ":")))
        schema_module._JUDGED.clear()
        allowance = _allowance(schema, answer)
        start_steps = allowance.steps
        start = time.process_time()
        verdict = schema_module.check(schema, answer, allowance)
        seconds = time.process_time() - start
        steps = start_steps - allowance.steps
        rows.append({"shape": name, "bytes": size, "ms": seconds * 1e3, "steps": steps,
                     "us_per_step": seconds * 1e6 / max(steps, 1), "us_per_byte": seconds * 1e6 / size,
                     "verdict": _verdict(verdict)})
    return rows


def measure_forms(count: int) -> list[dict[str, Any]]:
    interrupts = [Interrupt(id=f"form-{n}", reason="input", response_schema=form_schema(n)) for n in range(count)]
    size = sum(len(json.dumps(i.response_schema, separators=(",", ":"))) for i in interrupts)
    rows = []
    for label, wrong in (("all valid", False), ("last one wrong", True)):
        schema_module._JUDGED.clear()
        builder = ResumeBuilder(interrupts)
        for n, interrupt in enumerate(interrupts):
            answer: dict[str, Any] = form_answer(n)
            if wrong and n == count - 1:
                answer[f"form{n}_field1"] = -5
            builder.answer(interrupt.id, answer)
        verdict, seconds = _built(builder)
        rows.append({"forms": count, "answers": label, "schema_bytes": size, "ms": seconds * 1e3,
                     "us_per_byte": seconds * 1e6 / size, "verdict": verdict})
    return rows


def padded_hostile(number: int, characters: int) -> dict[str, Any]:
    """A schema that spends whatever it is allowed (a doubling ``allOf``), padded with a ``description``
    to ``characters`` of JSON text, so that its text buys it about as many steps."""
    schema = _doubling(30, {"type": "string"})
    schema["title"] = f"hostile {number}"
    schema["description"] = "x" * max(0, characters - len(json.dumps(schema, separators=(",", ":"))) - 20)
    return schema


def measure_response(mib: float) -> list[dict[str, Any]]:
    """One ``RUN_FINISHED`` of ``mib`` MiB of padded hostile schemas: folded by a session, then answered."""
    count = max(1, int(mib * 2**20 // 1_000_000))
    size = min(1_000_000 - 1_000, int(mib * 2**20))
    interrupts = [{"id": f"h{n}", "reason": "input", "responseSchema": padded_hostile(n, size)} for n in range(count)]
    event = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
             "outcome": {"type": "interrupt", "interrupts": interrupts}}
    payload = json.dumps(event, separators=(",", ":"))
    session = RunSession()
    session.feed_payload(json.dumps({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}))
    start = time.process_time()
    try:
        session.feed_payload(payload)
        verdict = "accepted"
    except ProtocolError as exc:
        verdict = f"{type(exc).__name__} {exc.rule} at {getattr(exc, 'interrupt_id', None)}"
    folded = time.process_time() - start
    rows = [{"what": "RUN_FINISHED folded", "bytes": len(payload), "ms": folded * 1e3, "steps": 0, "verdict": verdict}]
    schema_module._JUDGED.clear()
    spent: list[int] = []
    checking = schema_module.check

    def watched(schema: Any, instance: Any, allowance: Any = None) -> Any:
        before = allowance.steps if allowance is not None else 0
        found = checking(schema, instance, allowance)
        spent.append(before - allowance.steps if allowance is not None else 0)
        return found

    builder = ResumeBuilder(session.state.open_interrupts)
    for interrupt in session.state.open_interrupts:
        builder.answer(interrupt.id, "x")
    schema_module.check = watched  # type: ignore[assignment]
    try:
        verdict, seconds = _built(builder)
    finally:
        schema_module.check = checking  # type: ignore[assignment]
    rows.append({"what": f"resume answering its {len(session.state.open_interrupts)} interrupts", "bytes": len(payload),
                 "ms": seconds * 1e3, "steps": sum(spent), "verdict": verdict})
    return rows


def _built(builder: ResumeBuilder) -> tuple[str, float]:
    """``builder.build()``'s verdict ("accepted", or the refusal's ids and codes) and its CPU seconds."""
    start = time.process_time()
    try:
        builder.build()
        verdict = "accepted"
    except ResumeRefused as exc:
        codes = {fault.code for faults in exc.faults.values() for fault in faults}
        verdict = f"{type(exc).__name__} {len(exc.ids)} ids {sorted(codes) or ''}".strip()
    return verdict, time.process_time() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true", help="small sizes, in a second or two")
    parser.add_argument("--forms", type=int, default=1_000, help="interrupts in the resume of ordinary forms")
    parser.add_argument("--response-mib", type=float, default=16.0,
                        help="MiB of hostile schemas in the one RUN_FINISHED measured (default 16, max_event_bytes)")
    parser.add_argument("--json", type=Path, help="write the rows here too")
    args = parser.parse_args(argv)
    scale, forms, mib = (0.02, 20, 0.2) if args.tiny else (1.0, args.forms, args.response_mib)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; "
          f"CPU time of this process")
    hostile = measure_hostile(scale)
    print(f"\n{'one hostile schema':42} {'bytes':>9} {'ms':>8} {'steps':>10} {'µs/step':>8} {'µs/byte':>8}  verdict")
    for row in hostile:
        print(f"{row['shape']:42} {row['bytes']:>9,} {row['ms']:>8.1f} {row['steps']:>10,} {row['us_per_step']:>8.2f} "
              f"{row['us_per_byte']:>8.2f}  {row['verdict']}")
    ordinary = measure_forms(forms)
    print(f"\n{'ordinary 50-field forms in one resume':42} {'bytes':>9} {'ms':>8} {'µs/byte':>8}  verdict")
    for row in ordinary:
        print(f"{str(row['forms']) + ' forms, ' + row['answers']:42} {row['schema_bytes']:>9,} {row['ms']:>8.1f} "
              f"{row['us_per_byte']:>8.2f}  {row['verdict']}")
    response = measure_response(mib)
    print(f"\n{'one hostile response':42} {'bytes':>9} {'ms':>8} {'steps':>10}  verdict")
    for row in response:
        print(f"{row['what']:42} {row['bytes']:>9,} {row['ms']:>8.1f} {row['steps']:>10,}  {row['verdict']}")
    if args.json is not None:
        args.json.write_text(json.dumps({"hostile": hostile, "forms": ordinary, "response": response}, indent=1))


if __name__ == "__main__":
    main()
