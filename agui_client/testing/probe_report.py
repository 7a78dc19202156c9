"""The probe's report: what each check found, and its forms for a test, a terminal and CI.

:func:`agui_client.testing.probe` builds a :class:`ProbeReport`; this module only holds it (and its
JSON and JUnit forms), so a caller reading a stored report needs none of the probe's machinery.
"""

from __future__ import annotations

import re
from typing import Any, Literal
from xml.sax.saxutils import quoteattr

import attrs
from attrs import frozen

from .._inert import visible

__all__ = ["ProbeReport", "CheckResult", "Evidence", "ProbeRun", "Level", "Verdict"]

Level = Literal["MUST", "SHOULD", "heuristic"]
Verdict = Literal["pass", "fail", "warn", "n/a"]


# --------------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------------


@frozen(kw_only=True)
class Evidence:
    """What a check saw: the plan run, the event index in that run's response, and the values."""

    run: str | None
    index: int | None
    detail: str

    def __str__(self) -> str:
        where = self.run or "plan"
        if self.index is not None:
            where += f" #{self.index}"
        return f"{where}: {self.detail}"


@frozen(kw_only=True)
class CheckResult:
    """One rule judged against the producer.

    Attributes:
        id: the check's stable identifier (a section of ``docs/probe.md``).
        rule: the rule, in one sentence.
        level: ``MUST`` (a failure fails the probe), ``SHOULD`` or ``heuristic`` (they warn).
        verdict: ``pass``, ``fail``, ``warn`` or ``n/a``.
        reason: why this verdict (for ``n/a``: why the check did not apply).
        evidence: where and what the check saw.
    """

    id: str
    rule: str
    level: Level
    verdict: Verdict
    reason: str
    evidence: tuple[Evidence, ...] = ()


@frozen(kw_only=True)
class ProbeRun:
    """One request of the plan and what came of it.

    Attributes:
        name: the plan's name for it (``ask``, ``answer``, ``unknown-entry`` ...).
        thread_id: the thread it ran on (one fresh thread per plan part).
        run_id: the ``runId`` sent.
        sent: what the request carried, in words.
        outcome: ``success``, ``interrupt``, ``cancelled``, ``error`` (``RUN_ERROR``), ``rejected``
            (an HTTP error status, or not an event stream) or ``None`` (the stream ended mid-run).
        detail: the rejection or the ``RUN_ERROR``, in words (``None`` otherwise).
        events: how many events the response held.
        interrupts: the ids of the interrupts the run ended with.
    """

    name: str
    thread_id: str
    run_id: str
    sent: str
    outcome: str | None
    detail: str | None = None
    events: int = 0
    interrupts: tuple[str, ...] = ()


@frozen(kw_only=True)
class ProbeReport:
    """Every check of a probe, and the runs they judged.

    Attributes:
        target: the URL probed (or the ASGI app's name).
        prompt: the user message that starts each plan part.
        defective: whether the defective inputs were sent (``defective=True``).
        runs: the plan's requests, in order.
        checks: one result per check of :data:`CHECKS`, in that order.
    """

    target: str
    prompt: str
    defective: bool
    runs: tuple[ProbeRun, ...]
    checks: tuple[CheckResult, ...]

    def check(self, check_id: str) -> CheckResult:
        """The result of the check ``check_id``.

        Raises:
            KeyError: no check has that id.
        """
        for result in self.checks:
            if result.id == check_id:
                return result
        raise KeyError(check_id)

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        """The checks that failed (only ``MUST`` checks fail)."""
        return tuple(c for c in self.checks if c.verdict == "fail")

    @property
    def warnings(self) -> tuple[CheckResult, ...]:
        """The checks that warned (``SHOULD`` and heuristic checks that did not pass, and doubtful passes)."""
        return tuple(c for c in self.checks if c.verdict == "warn")

    def exit_status(self, *, strict: bool = False) -> int:
        """``agui probe``'s exit status: 1 when a ``MUST`` check failed (or, ``strict``, any warned), else 0."""
        return 1 if self.failures or (strict and self.warnings) else 0

    def assert_conformant(self, *, strict: bool = False) -> None:
        """Raise ``AssertionError`` listing what failed (and, ``strict``, what warned); for a pytest test.
        The reasons and evidence quote the agent (a ``RUN_ERROR``'s message): in the error's message they
        are made inert as the CLI shows them (``\\x1b``, ``\\u202e``), since pytest prints it to the terminal.

        Example::

            probe(app, prompt="Delete the staging environment").assert_conformant()
        """
        bad = self.failures + (self.warnings if strict else ())
        if bad:
            lines = [f"{self.target}: {len(bad)} check(s) did not pass"]
            for result in bad:
                lines.append(f"- {result.id} [{result.level}] {result.verdict}: {result.reason}")
                lines += [f"    {item}" for item in result.evidence[:5]]
            raise AssertionError(visible("\n".join(lines)))

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (what ``agui probe --json`` prints)."""
        return {
            "target": self.target, "prompt": self.prompt, "defective": self.defective,
            "failures": len(self.failures), "warnings": len(self.warnings),
            "runs": [attrs.asdict(run, recurse=True) for run in self.runs],
            "checks": [{"id": c.id, "rule": c.rule, "level": c.level, "verdict": c.verdict, "reason": c.reason,
                        "evidence": [attrs.asdict(e) for e in c.evidence]} for c in self.checks],
        }

    def to_junit(self, *, strict: bool = False) -> str:
        """The report as JUnit XML: one test case per check; ``fail`` is a failure, ``n/a`` is skipped,
        ``warn`` passes with the warning in its output (a failure when ``strict``)."""
        failed = sum(1 for c in self.checks if c.verdict == "fail" or (strict and c.verdict == "warn"))
        skipped = sum(1 for c in self.checks if c.verdict == "n/a")
        cases = []
        for c in self.checks:
            text = "\n".join([c.reason, *(str(e) for e in c.evidence)])
            name = quoteattr(_xml_text(f"{c.id} [{c.level}]"))
            body = ""
            if c.verdict == "fail" or (strict and c.verdict == "warn"):
                body = (f"<failure message={quoteattr(_xml_text(c.reason))} type={quoteattr(c.verdict)}>"
                        f"{_xml_escape(text)}</failure>")
            elif c.verdict == "n/a":
                body = f"<skipped message={quoteattr(_xml_text(c.reason))}/>"
            if c.verdict == "warn":
                body += f"<system-out>{_xml_escape('warning: ' + text)}</system-out>"
            cases.append(f'  <testcase classname="agui.probe" name={name}>{body}</testcase>')
        head = (f'<testsuite name="agui probe" tests="{len(self.checks)}" failures="{failed}" errors="0" '
                f'skipped="{skipped}">')
        props = (f'  <properties><property name="target" value={quoteattr(_xml_text(self.target))}/>'
                 f'<property name="defective" value="{str(self.defective).lower()}"/></properties>')
        return "\n".join(['<?xml version="1.0" encoding="UTF-8"?>', head, props, *cases, "</testsuite>", ""])


# XML 1.0 cannot hold most C0 controls even escaped; an agent's text may carry them.
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _xml_text(text: str) -> str:
    # What a terminal would obey or a reader could not see (the C1 controls, a bidi override), which XML
    # holds, is written as its escape too, as the table and --json show it: a CI job that prints the file,
    # or a page showing a failure's message, must not be steered by the agent's text.
    return _XML_BAD.sub(lambda m: f"\\x{ord(m.group()):02x}", visible(text))


def _xml_escape(text: str) -> str:
    return _xml_text(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
