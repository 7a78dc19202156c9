"""``agui probe URL --prompt TEXT``: check a producer against the interrupt rules (``docs/probe.md``).

Runs :func:`agui_client.testing.probe` and shows its report as a table (``--json``: the report as
JSON on stdout; ``--junit FILE``: JUnit XML for CI). Exit 0 when no MUST check failed, 1 when one did
(or, with ``--strict``, when any check warned), 2 on a usage problem or when the probe could not run.
"""

from __future__ import annotations

import argparse
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from ..testing.probing import DEFAULT_RUN_TIMEOUT, ProbeError, ProbeReport, probe
from .converse import UsageProblem
from .forms import answer_parts, typed_json
from .options import seconds
from .render import Output, PlainOutput, RichOutput
from .terminal import SafeConsole, json_text, one_line, safe_text, typed_text

__all__ = ["add_probe_parser", "probe_command", "parse_answers"]

_STYLES = {"pass": "green", "fail": "bold red", "warn": "yellow", "n/a": "dim"}


def add_probe_parser(commands: Any) -> None:
    """Add the ``probe`` subcommand to ``agui``'s subparsers."""
    parser = commands.add_parser(
        "probe", help="check an AG-UI producer against the interrupt rules (for its CI)",
        description="Run a fixed plan of runs against the agent, each on a fresh thread, and judge every "
                    "interrupt rule: the rule, its level (MUST, SHOULD, heuristic), the verdict and the "
                    "evidence. Exit 0 when no MUST check fails, 1 when one does (--strict: or any warns), "
                    "2 on usage errors. See docs/probe.md.")
    parser.add_argument("url", metavar="URL", help="the agent's endpoint")
    parser.add_argument("--prompt", required=True, metavar="TEXT", type=typed_text,
                        help="the user message that makes the agent stop to ask (starts every plan part)")
    parser.add_argument("--answer", action="append", default=[], metavar="ID=JSON", type=typed_text,
                        help="the payload for interrupt ID (repeatable; a bare JSON answers every interrupt); "
                             "otherwise the schema's defaults, as --yes answers")
    parser.add_argument("--defective", action="store_true",
                        help="also send two inputs a conforming consumer never sends (an uncovered resume, "
                             "the same resume twice); off by default")
    parser.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")
    parser.add_argument("-H", "--header", action="append", default=[], metavar="'NAME: VALUE'",
                        help="a request header (repeatable); values are sent, never printed")
    # (the same meaning as on run, demo and chat: one run, from its request to its last event)
    parser.add_argument("--timeout", type=seconds, default=DEFAULT_RUN_TIMEOUT, metavar="SECONDS",
                        help=f"the longest one run may take, from its request to its last event "
                             f"(default {DEFAULT_RUN_TIMEOUT:g})")
    parser.add_argument("--thread-prefix", default="agui-probe-", metavar="TEXT", type=typed_text,
                        help="each plan part's threadId is TEXT followed by a new UUID (default agui-probe-; "
                             "'' for a bare UUID, for an agent that accepts nothing else)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--junit", metavar="FILE", help="also write the report as JUnit XML to FILE")
    parser.add_argument("--plain", action="store_true", help="plain, colourless output")


def parse_answers(values: list[str]) -> dict[str, Any]:
    """``--answer`` values: ``ID=JSON`` for one interrupt, a bare JSON value (key ``*``) for every other one.

    Raises:
        UsageProblem: a value is neither.
    """
    answers: dict[str, Any] = {}
    for value in values:
        try:
            answers["*"] = typed_json(value)
            continue
        except ValueError:
            pass
        parts = answer_parts(value)
        if parts is None or not parts[0]:
            raise UsageProblem(f"--answer expects ID=JSON or a JSON value, got {value!r}")
        key, text = parts
        try:
            answers[key] = typed_json(text)
        except ValueError as exc:
            raise UsageProblem(f"--answer for {key!r} is not JSON: {exc}") from None
    return answers


def probe_command(out: Output, args: argparse.Namespace, *, headers: Mapping[str, str]) -> int:
    """Run the probe and show its report; the exit status."""
    answers = parse_answers(args.answer)
    if args.timeout <= 0:
        raise UsageProblem("--timeout must be positive")
    if args.junit is not None:
        # A path that cannot be written is a usage error, found before the runs (and no empty file left).
        target = Path(args.junit)
        if not os.access(target.parent, os.W_OK) or target.is_dir() or (
                target.exists() and not os.access(target, os.W_OK)):
            raise UsageProblem(f"cannot write {args.junit}")
    if not args.defective:
        out.line("defective inputs: off (--defective also sends a resume leaving an interrupt uncovered and the "
                 "same resume twice, which a conforming consumer never sends)", "dim")
    try:
        report = probe(args.url, prompt=args.prompt, answers=answers, defective=args.defective, headers=headers,
                       run_timeout=args.timeout, thread_ids=lambda: f"{args.thread_prefix}{uuid.uuid4()}")
    except ProbeError as exc:
        raise UsageProblem(str(exc)) from None
    if args.junit is not None:
        with open(args.junit, "w", encoding="utf-8") as handle:
            handle.write(report.to_junit(strict=args.strict))
    if args.json:
        print(json_text(report.to_json(), indent=2))
    else:
        _show(out, report)
    status = report.exit_status(strict=args.strict)
    summary = (f"{len(report.failures)} MUST check(s) failed, {len(report.warnings)} warning(s)"
               + (" (--strict: warnings fail)" if args.strict and report.warnings else ""))
    # A prompt the agent simply answers leaves the interrupt checks n/a: the exit status stays 0 (the agent
    # broke no rule), but a green "0 failed" alone read as a pass in CI for an agent whose interrupts were
    # never seen.
    unasked = not any(run.interrupts for run in report.runs)
    if unasked:
        summary += ("; the prompt raised no interrupt, so the interrupt rules were not judged (give --prompt "
                    "one that makes the agent stop to ask)")
    out.line(summary, "bold red" if status else "bold yellow" if unasked else "bold green")
    return status


#: The longest line of evidence (or of a run's detail) the table shows; --json and JUnit keep them whole.
EVIDENCE_CHARS = 1000


def _show(out: Output, report: ProbeReport) -> None:
    out.line(f"agui probe {report.target}: {len(report.runs)} run(s)", "bold")
    for run in report.runs:
        detail = f" - {one_line(run.detail, EVIDENCE_CHARS)}" if run.detail else ""
        out.line(f"  {run.name}: {run.outcome}{detail}", "dim")
    plain = not isinstance(out, RichOutput)
    console = out.console if isinstance(out, RichOutput) else SafeConsole(
        file=out.stream if isinstance(out, PlainOutput) else None, no_color=True, width=140)
    table = Table(show_lines=True, header_style="bold", box=box.ASCII if plain else box.SQUARE)
    for column in ("check", "level", "verdict", "rule / finding"):
        table.add_column(column, overflow="fold")
    for check in report.checks:
        body = safe_text(check.rule + "\n")
        body.append(safe_text(check.reason, _STYLES[check.verdict]))
        for item in check.evidence[:6]:
            body.append(safe_text("\n  " + one_line(str(item), EVIDENCE_CHARS), "dim"))
        if len(check.evidence) > 6:
            body.append(safe_text(f"\n  ... {len(check.evidence) - 6} more (--json lists all)", "dim"))
        table.add_row(check.id, check.level, safe_text(check.verdict, _STYLES[check.verdict]), body)
    out.end_line()
    console.print(table)
