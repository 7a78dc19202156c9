"""Record the legacy-interrupt streams under tests/data/legacy/ from the real ag-ui-langgraph producer.

Run in the interop venv (``bash .ci/interop.sh`` builds it)::

    .venv-interop/bin/python tests/interop/record_legacy.py

It serves the interop graph (``test_langgraph.py``'s producer) on 127.0.0.1 and, for each case, runs a
thread through the public API with ``legacy_interrupts="langgraph"``: the interrupted run, then its
resume. Each response is written as it came (``<case>-1.sse``, ``<case>-2.sse``), except that the
``/default`` endpoint's RAW passthrough is trimmed to keep the files small: ``RAW`` events and the
``rawEvent`` copies on events other than ``CUSTOM`` are dropped (the ``CUSTOM`` event's ``rawEvent``,
which carries LangGraph's interrupt id, is kept as sent). The ``lean`` case comes from the endpoint
with ``emit_raw_events=False`` and is untouched. The request bodies go to ``<case>.requests.json``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "data" / "legacy"
sys.path.insert(0, str(HERE))
os.environ.update(LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false", LANGCHAIN_TRACING="false",
                  OTEL_SDK_DISABLED="true")

import test_langgraph  # noqa: E402

from agui_client import AgentClient  # noqa: E402

#: case -> (endpoint, the answer: a payload, or None to abandon)
CASES: dict[str, tuple[str, Any]] = {
    "approved": ("/default", {"approved": True}),
    "rejected": ("/default", {"approved": False, "reason": "not today"}),
    "cancelled": ("/default", None),
    "lean": ("/lean", {"approved": True}),
}


def _trim(body: bytes) -> str:
    frames = []
    for line in body.decode("utf-8").splitlines():
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:])
        if event["type"] == "RAW":
            continue
        if event["type"] != "CUSTOM":
            event.pop("rawEvent", None)
        frames.append("data: " + json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n\n")
    return "".join(frames)


def main() -> None:
    import warnings

    warnings.filterwarnings("ignore", message="`get_config_jsonschema` is deprecated")
    OUT.mkdir(parents=True, exist_ok=True)
    with test_langgraph.running_producer() as producer:
        for case, (path, answer) in CASES.items():
            start = len(producer.recorder.exchanges)
            with AgentClient(producer.endpoint(path), legacy_interrupts="langgraph") as client:
                thread = client.thread()
                first = thread.run("delete the file")
                (interrupt,) = first.interrupts
                builder = thread.resume_builder()
                if answer is None:
                    builder.abandon(interrupt.id)
                else:
                    builder.answer(interrupt.id, answer)
                thread.run(resume=builder)
            exchanges = producer.recorder.exchanges[start:]
            assert len(exchanges) == 2, case
            for n, exchange in enumerate(exchanges, 1):
                body = exchange["response"]
                text = _trim(body) if path == "/default" else body.decode("utf-8")
                (OUT / f"{case}-{n}.sse").write_text(text, encoding="utf-8")
            requests = [json.loads(e["request"]) for e in exchanges]
            (OUT / f"{case}.requests.json").write_text(json.dumps(requests, indent=1, ensure_ascii=False) + "\n",
                                                       encoding="utf-8")
            print(case, [len(e["response"]) for e in exchanges])


if __name__ == "__main__":
    main()
