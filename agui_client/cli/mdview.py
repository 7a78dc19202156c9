"""rich's Markdown as the chat draws an agent's answer: nothing the agent wrote is left off the screen.

rich draws a Markdown table as a rich ``Table``, whose columns cut a word wider than themselves with an
ellipsis (``hotelh…``) and shrink to nothing when there are more of them than the width holds (26
one-letter columns at 60 columns showed 8 of them): an agent could put words in a table the person
never sees. :class:`FittedTable` folds a long word onto the next lines instead, and a table too wide to
give each column a character is shown as its rows, cells between ``|``, as text: all of it, and cheap
(rich's layout of a 10,000-column table took some 1.7 s to show nothing readable).

rich shows a link as its text and its target, ``text (https://…)``, but never its title (``[ok](https://…
"more words")``), nor an image's: :func:`show_titles` puts each title beside its target or alt text.

This module imports ``rich.markdown`` (and with it markdown-it), so the chat imports it when it first
renders an answer, not every ``agui`` command.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, ClassVar

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Markdown, MarkdownElement, TableElement, TableRowElement
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from markdown_it.token import Token

__all__ = ["AnswerMarkdown", "FittedTable", "show_titles", "COLUMN_CELLS"]

#: The cells of the terminal a table column takes at the least: one for its text and two for the space
#: between it and the next (rich gives a column no width at all when fewer are left). A column holding
#: a character two cells wide takes one more, and the table's edge one in all (``FittedTable._needed_cells``).
COLUMN_CELLS = 3


class FittedTable(TableElement):
    """A Markdown table drawn whole: its long words folded, or, wider than the width allows, its rows as text."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The table rich draws, each column folding what does not fit, or the rows as text."""
        header = self.header.row.cells if self.header is not None and self.header.row is not None else []
        if len(header) * COLUMN_CELLS >= options.max_width or self._needed_cells(len(header)) > options.max_width:
            note = Text(f"(a table of {len(header)} columns, too many for the width: its rows as text)", "dim")
            yield Text("\n").join([note, *self._rows()])
            return
        for table in super().__rich_console__(console, options):
            if isinstance(table, Table):
                for column in table.columns:
                    column.overflow = "fold"  # (rich's default, an ellipsis, hides the rest of the word)
            yield table

    def _needed_cells(self, columns: int) -> int:
        """The width the table needs to give each of its ``columns`` a character of its widest: rich gave a
        column no room at all where the width held three cells a column and no more (the table's edge
        takes one), or where a character two cells wide, which cannot be folded into one, had only one."""
        widest = [1] * columns
        for row in self._all_rows():
            for index, cell in enumerate(row.cells[:columns]):
                text = cell.content.plain
                if not text.isascii():  # (every ASCII character the chat shows is one cell wide)
                    widest[index] = max(widest[index], max(map(cell_len, text), default=1))
        return sum(widest) + (COLUMN_CELLS - 1) * columns + 1

    def _all_rows(self) -> list[TableRowElement]:
        rows = [self.header.row] if self.header is not None and self.header.row is not None else []
        return rows + (self.body.rows if self.body is not None else [])

    def _rows(self) -> Iterator[Text]:
        for row in self._all_rows():
            yield Text.assemble("| ", Text(" | ").join(cell.content for cell in row.cells), " |")


class AnswerMarkdown(Markdown):
    """rich's ``Markdown`` with :class:`FittedTable` for tables (see the module docstring)."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {**Markdown.elements, "table_open": FittedTable}


def show_titles(tokens: Iterable[Token]) -> None:
    """Put each link's title after its target (``text (https://… "title")``) and each image's after its alt
    text, in ``tokens`` (markdown-it's, changed in place), where rich shows them."""
    for token in tokens:
        for child in token.children or ():
            title = child.attrs.get("title")
            if not title:
                continue
            if child.type == "link_open":
                child.attrs["href"] = f'{child.attrs.get("href", "")} "{title}"'
            elif child.type == "image":
                child.content = f'{child.content} "{title}"'
