"""What drawing an agent's answer costs ``agui chat``: ``python -m bench.render``.

Two measures, on a console of ``--width`` columns writing to memory (no terminal), processor time
(``time.process_time``), the best of ``--rounds``:

- **blocks**: one finished block of each hostile or simply long kind (a table of 10,000 columns, 8 KiB
  of table rows or of highlighted code, 13,000 headings, a combining-mark tower, bracket and link
  floods …) rendered as the chat prints it (``chatview._markdown``), with the characters written;
- **written by the chat**: the same blocks, each given whole to the chat's Markdown writer
  (``chatview._MarkdownWriter``) as one message, and closed: what the chat prints of it, its
  Markdown budget included (the blocks it cuts the text into, each charged what it writes);
- **tails**: a long table and a long code block streamed a row at a time into the chat's Markdown
  writer, the live tail refreshed after every row (the most the display would), with the drawings
  made, the characters drawn and the processor time they took;
- **idle refreshes**: the live display refreshed ``--rows`` times more after the table's tail, the
  message unchanged (an agent thinking between two words): the time each took and what it wrote; the
  same for the reasoning the chat shows dimmed while it streams (``chatview._Thinking``).

No figure is asserted anywhere (``tests/test_bench_smoke.py`` only runs it, ``--tiny``: each block a
hundredth of its size).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agui_client.cli import chatview  # noqa: E402
from agui_client.cli.render import PlainOutput  # noqa: E402
from agui_client.cli.terminal import SafeConsole  # noqa: E402


def _table(columns: int, rows: int, cell: str = "a") -> str:
    line = "|" + f"{cell}|" * columns + "\n"
    return line + "|" + "-|" * columns + "\n" + line * rows


def blocks(scale: int = 1) -> dict[str, str]:
    """The blocks measured, by kind (each row says its size in characters): one of each hostile or simply
    long kind; ``scale`` divides their sizes (``--tiny``: 100, a run that measures nothing, for the smoke
    test)."""
    def n(count: int) -> int:
        return max(count // scale, 2)

    return {
        "table, too wide for the terminal": _table(n(10_000), 1),
        "table, 26 columns": _table(26, 1),
        "table rows": "|a|b|c|d|\n|-|-|-|-|\n" + "|12|34|56|78|\n" * n(585),
        "code, python": "```python\n" + "def f(x):\n    return x + 1  # c\n" * n(250) + "```\n",
        "paragraph": "word " * n(13_000),
        "one word": "x" * n(60_000),
        "headings": "# a\n\n" * n(13_000),
        "one letter, combining marks": "a" + "\u0301" * n(10_000),
        "zero-width joiners": "a" + "\u200d" * n(10_000),
        "tabs": "a" + "\t" * n(10_000) + "b",
        "brackets": "[" * n(64_000),
        "links": "[a](b) " * n(9_000),
        "lists, nested": "".join("  " * i + "- x\n" for i in range(n(1_000))),
        "quotes, nested": ">" * n(10_000) + " x",
    }


def _console(width: int, sink: io.StringIO) -> SafeConsole:
    return SafeConsole(file=sink, width=width, height=50, force_terminal=True, color_system="truecolor")


def block(text: str, width: int, rounds: int) -> dict[str, Any]:
    """The best processor time of rendering ``text`` as one printed block, and the characters written."""
    best, written = float("inf"), 0
    for _ in range(rounds):
        sink = io.StringIO()
        console = _console(width, sink)
        started = time.process_time()
        console.print(chatview._markdown(text))
        best = min(best, time.process_time() - started)
        written = len(sink.getvalue())
    return {"chars": len(text), "seconds": best, "written": written}


def through_writer(text: str, width: int, rounds: int) -> dict[str, Any]:
    """The best processor time of the chat's writer printing ``text`` as one message, and what it wrote."""
    best, written = float("inf"), 0
    for _ in range(rounds):
        sink = io.StringIO()
        writer = chatview._MarkdownWriter(_console(width, sink), "agent:")
        started = time.process_time()
        writer.feed(text)
        writer.close()
        best = min(best, time.process_time() - started)
        written = len(sink.getvalue())
    return {"seconds": best, "written": written}


def idle(head: str, row: Callable[[int], str], rows: int, width: int) -> dict[str, Any]:
    """A tail streamed, then refreshed ``rows`` times unchanged: the time a refresh took and what it wrote."""
    sink = io.StringIO()
    writer = chatview._MarkdownWriter(_console(width, sink), "agent:")
    writer.feed(head + "".join(row(number) for number in range(20)))
    measured = _refreshed(writer._live, sink, rows)
    writer.close()
    return measured


def idle_thinking(rows: int, width: int) -> dict[str, Any]:
    """The reasoning display given some lines, then refreshed ``rows`` times unchanged: as :func:`idle`."""
    sink = io.StringIO()
    thinking = chatview._Thinking(PlainOutput(io.StringIO()), _console(width, sink))
    thinking.feed("".join(f"step {n}: weighing the options\n" for n in range(20)))
    measured = _refreshed(thinking._live, sink, rows)
    thinking.fold()
    return measured


def _refreshed(live: Any, sink: io.StringIO, rows: int) -> dict[str, Any]:
    """``live`` refreshed once, then ``rows`` times more with nothing new: the CPU each and what it wrote."""
    assert live is not None
    live.refresh()
    before = len(sink.getvalue())
    started = time.process_time()
    for _ in range(rows):
        live.refresh()
    took = time.process_time() - started
    return {"refreshes": rows, "ms each": took / rows * 1000, "written": len(sink.getvalue()) - before}


def tail(head: str, row: Callable[[int], str], rows: int, width: int) -> dict[str, Any]:
    """A block streamed a row at a time, the live tail refreshed after each: drawings, characters, time."""
    drawn: list[int] = []
    markdown = chatview._markdown

    def counted(text: str) -> Any:
        drawn.append(len(text))
        return markdown(text)

    chatview._markdown = counted  # type: ignore[assignment]
    try:
        writer = chatview._MarkdownWriter(_console(width, io.StringIO()), "agent:")
        writer.feed(head)
        started = time.process_time()
        for number in range(rows):
            writer.feed(row(number))
            live = writer._live
            if live is not None:
                live.refresh()
        took = time.process_time() - started
        drawings, chars = len(drawn), sum(drawn)
        writer.close()
    finally:
        chatview._markdown = markdown  # type: ignore[assignment]
    return {"rows": rows, "drawings": drawings, "chars drawn": chars, "seconds": took}


def main(argv: list[str] | None = None) -> int:
    """Run both measures and print them (``--json FILE`` also writes them)."""
    parser = argparse.ArgumentParser(prog="python -m bench.render", description=__doc__.split("\n")[0])
    parser.add_argument("--width", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=1_500, help="rows of each streamed tail")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--tiny", action="store_true",
                        help="blocks a hundredth of their size (a run that measures nothing: the smoke test's)")
    args = parser.parse_args(argv)
    measured = blocks(100 if args.tiny else 1)
    results: dict[str, Any] = {"blocks": {}, "written by the chat": {}, "tails": {}}
    for name, text in measured.items():
        row = results["blocks"][name] = block(text, args.width, args.rounds)
        print(f"{name:38s} {row['chars']:>9,} chars  {row['seconds']:7.3f} s  {row['written']:>10,} written")
    for name, text in measured.items():
        row = results["written by the chat"][name] = through_writer(text, args.width, args.rounds)
        print(f"by the chat, {name:38s} {len(text):>9,} chars  {row['seconds']:7.3f} s  {row['written']:>10,} written")
    tails = {"table": ("| a | b | c | d |\n|---|---|---|---|\n", lambda n: f"| {n} | xx | yy | zz |\n"),
             "code": ("```python\n", lambda n: f"def f{n}(x):  # {n}\n")}
    for name, (head, row_of) in tails.items():
        row = results["tails"][name] = tail(head, row_of, args.rows, args.width)
        print(f"tail, {name:32s} {row['rows']:>9,} rows   {row['seconds']:7.3f} s  {row['drawings']:>6,} drawings "
              f"of {row['chars drawn']:,} characters")
    row = results["idle refreshes"] = idle(*tails["table"], args.rows, args.width)
    print(f"idle refreshes of a table's tail        {row['refreshes']:>9,}       {row['ms each']:7.3f} ms each, "
          f"{row['written']:,} written")
    row = results["idle reasoning refreshes"] = idle_thinking(args.rows, args.width)
    print(f"idle refreshes of the reasoning shown   {row['refreshes']:>9,}       {row['ms each']:7.3f} ms each, "
          f"{row['written']:,} written")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
