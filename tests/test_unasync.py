"""The sync shells are generated from the async ones (``python -m tools.unasync``), never edited by hand.

The first test is the one CI relies on: a checked-in sync twin that is not what the script makes from
its async source (a hand edit, or a source changed without running the script) fails it. The others pin
the rewrite's rules on small sources, so a change to the script shows what it changes.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tools import unasync

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("source", "target"), unasync.FILES, ids=[target for _, target in unasync.FILES])
def test_each_sync_twin_is_what_the_script_makes_of_its_async_source(source: str, target: str) -> None:
    made = unasync.unasync((ROOT / source).read_text(encoding="utf-8"), source)

    assert (ROOT / target).read_text(encoding="utf-8") == made, (
        f"{target} is not what python -m tools.unasync makes of {source}: edit the source and run the script")


def test_check_reports_a_twin_edited_by_hand_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.py").write_text("async def f():\n    await g()\n", encoding="utf-8")
    twin = tmp_path / "s.py"
    monkeypatch.setattr(unasync, "ROOT", tmp_path)
    monkeypatch.setattr(unasync, "FILES", [("a.py", "s.py")])

    assert unasync.main([]) == 0 and twin.read_text(encoding="utf-8").endswith("def f():\n    g()\n")
    assert unasync.main(["--check"]) == 0
    assert capsys.readouterr().err == "s.py: written\n"
    twin.write_text(twin.read_text(encoding="utf-8") + "x = 1\n", encoding="utf-8")
    edited = twin.read_text(encoding="utf-8")

    assert unasync.main(["--check"]) == 1
    assert twin.read_text(encoding="utf-8") == edited
    assert capsys.readouterr().err == "s.py: out of date\n"


def _sync(source: str) -> str:
    made = unasync.unasync(textwrap.dedent(source), "src.py")
    header, _, body = made.partition("\n")
    assert header == "# generated from src.py by python -m tools.unasync; do not edit (edit the source, run the script)"
    return body


def test_async_keywords_go_and_mapped_names_become_their_sync_twins() -> None:
    assert _sync("""\
        @asynccontextmanager
        async def opened(self, stack: AsyncExitStack) -> AsyncIterator[AsyncRunStream]:
            async with self.lock:
                async for item in self.items:
                    await stack.enter_async_context(item)
            yield await anext(self.source, None)
            await self.stream.__aexit__(None, None, None)
            await self.events.aclose()
        """) == textwrap.dedent("""\
        @contextmanager
        def opened(self, stack: ExitStack) -> Iterator[RunStream]:
            with self.lock:
                for item in self.items:
                    stack.enter_context(item)
            yield next(self.source, None)
            self.stream.__exit__(None, None, None)
            self.events.close()
        """)


def test_only_whole_names_change() -> None:
    # (a name that holds a mapped one, and an attribute spelled like a keyword's neighbour, stay as written)
    source = "x = self.awaited + MyAsyncThread + AsyncThreadX + asyncio.sleep\n"

    assert _sync(source) == source


def test_an_async_generator_gets_its_return_type() -> None:
    assert _sync("def f() -> AsyncGenerator[int, None]: ...\n") == "def f() -> Generator[int, None, None]: ...\n"


def test_docstrings_and_comments_read_as_sync_code() -> None:
    assert _sync('''\
        def f():
            """Use ``async with thread.stream()`` or ``await thread.run()`` (see AsyncThread.run): awaited."""
            return 1  # (as AsyncThread.run; async for the events)
        ''') == textwrap.dedent('''\
        def f():
            """Use ``with thread.stream()`` or ``thread.run()`` (see Thread.run): awaited."""
            return 1  # (as Thread.run; for the events)
        ''')


def test_continuation_lines_follow_their_bracket_left() -> None:
    assert _sync("""\
        async def run(self, message: str,
                      tools: AsyncIterator[int]) -> (AsyncRunStream |
                                                     None):
            return await self.send(message,
                                   tools)
        """) == textwrap.dedent("""\
        def run(self, message: str,
                tools: Iterator[int]) -> (RunStream |
                                          None):
            return self.send(message,
                             tools)
        """)


def test_an_f_string_is_rewritten_whole_as_one_string_on_every_python() -> None:
    # Python 3.12 tokenizes an f-string in parts, 3.10 and 3.11 as one string: the twin must not depend on
    # which version ran the script (tests/test_unasync.py's first test compares it on the version that
    # runs the suite). 3.12 left the text of an f-string over several lines as written where 3.11
    # rewrote it, and moved a line inside it left with the bracket before it, changing the string.
    assert _sync('''\
        async def f(name):
            x = await g(f"""{name}: await it, then aclose()
                        {name} aclose""")
            return f"{{aclose}} {await name.aclose()} AsyncThread {name!r:>{width}}"
        ''') == textwrap.dedent('''\
        def f(name):
            x = g(f"""{name}: it, then close()
                        {name} close""")
            return f"{{close}} {name.close()} Thread {name!r:>{width}}"
        ''')


def test_a_marked_block_keeps_the_sync_side_as_written() -> None:
    assert _sync("""\
        def f():
            # unasync: async only
            raise asyncio.CancelledError  # AsyncThread
            # unasync: sync only
            # raise KeyboardInterrupt  # AsyncThread stays: the sync side is written as sync code
            #
            # return 1
            # unasync: end
        """) == textwrap.dedent("""\
        def f():
            raise KeyboardInterrupt  # AsyncThread stays: the sync side is written as sync code

            return 1
        """)


def test_a_marked_string_is_the_sync_twins_docstring_of_its_class_or_function() -> None:
    assert _sync('''\
        class AsyncThread:
            """Awaited: ``await thread.run()``."""
            # unasync: sync docstring
            """Called: ``thread.run()`` (AsyncThread stays as written)."""

            async def run(self):
                """Run, awaited."""
                # unasync: sync docstring
                """Run, in the calling thread."""
                await self.go()
        ''') == textwrap.dedent('''\
        class Thread:
            """Called: ``thread.run()`` (AsyncThread stays as written)."""

            def run(self):
                """Run, in the calling thread."""
                self.go()
        ''')


def test_a_modules_sync_docstring_after_its_imports_takes_the_docstrings_place_and_leaves_one_blank_line() -> None:
    assert _sync('''\
        """The async module: ``AsyncThread``.

        More about it.
        """

        from __future__ import annotations

        import x

        # unasync: sync docstring
        """The sync module: ``Thread``."""

        __all__ = ["AsyncThread"]
        ''') == textwrap.dedent('''\
        """The sync module: ``Thread``."""

        from __future__ import annotations

        import x

        __all__ = ["Thread"]
        ''')


def test_a_marker_quoted_inside_a_docstring_is_refused_rather_than_read_as_one() -> None:
    source = textwrap.dedent('''\
        def f():
            """Mark the async side so:

            # unasync: async only
            """
        ''')

    with pytest.raises(unasync.MarkError) as refused:
        unasync.unasync(source, "src.py")

    assert str(refused.value) == ("line 4: '# unasync: async only' inside a string would read as a marker; "
                                  "word it otherwise")


@pytest.mark.parametrize(("source", "said"), [
    ("# unasync: sync only\n# x = 1\n# unasync: end\n", "line 1: '# unasync: sync only' after no marker"),
    ("x = 1\n# unasync: sync docstring\ny = 2\n",
     "line 2: '# unasync: sync docstring' is not followed by a string statement"),
    ("x = 1\n# unasync: sync docstring\n\"\"\"Sync.\"\"\"\n",
     "line 2: the scope of '# unasync: sync docstring' has no docstring"),
    ("\"\"\"A.\"\"\"\n# unasync: sync docstring\n\"S.\"\n# unasync: sync docstring\n\"T.\"\n",
     "line 4: the scope of '# unasync: sync docstring' has its sync docstring already"),
    ("# unasync: async only\nx = 1\n", "'# unasync: async only' block never ends"),
    ("# unasync: async only\nx = 1\n# unasync: sync only\nx = 2\n# unasync: end\n",
     "line 4: a sync-only line is not commented out with '# '"),
])
def test_markers_that_do_not_pair_up_are_refused_with_where(source: str, said: str) -> None:
    with pytest.raises(unasync.MarkError) as refused:
        unasync.unasync(source, "src.py")

    assert str(refused.value) == said
