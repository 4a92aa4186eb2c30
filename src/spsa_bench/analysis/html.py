"""Markdown as the report shows it: a self-contained HTML page (Snakemake's report shows
an HTML result inline, a Markdown one only as a download).

:func:`markdown_html` renders the subset the workflow's Markdown outputs use: ``#``
headings, paragraphs, ``-`` lists, pipe tables (a header row, a ``|---|`` rule, rows),
and inline ``**bold**``, ``*emphasis*`` and ```code```; everything else is escaped text.
:func:`csv_html` shows a CSV table (every row and column, cells as written) the same way.
"""

from __future__ import annotations

import csv
import html
import io
import re

STYLE = (
    "body{font-family:sans-serif;max-width:60em;margin:1em auto;line-height:1.45}"
    "table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #bbb;padding:2px 6px}"
    "code{background:#f2f2f2;padding:0 2px}"
)
#: A table page's style: :data:`STYLE` without the text column's width limit (a wide
#: table scrolls sideways in the report's panel instead of squeezing its columns).
TABLE_STYLE = STYLE + "body{max-width:none;margin:1em}td{white-space:nowrap}"


def _inline(text: str) -> str:
    """Escaped text with the inline markup turned into tags (code spans first, untouched)."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
            continue
        part = html.escape(part)
        part = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", part)
        part = re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", r"<em>\1</em>", part)
        out.append(part)
    return "".join(out)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table(lines: list[str]) -> str:
    head, rows = _cells(lines[0]), [_cells(line) for line in lines[2:]]
    out = ["<table>", "<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in rows]
    return "\n".join([*out, "</table>"])


def _blocks(text: str) -> list[list[str]]:
    """Runs of non-blank lines."""
    blocks, current = [], []
    for line in text.splitlines():
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    return [*blocks, current] if current else blocks


def _page(title: str, body: list[str], style: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def markdown_html(text: str, title: str, style: str = STYLE) -> str:
    """``text`` (Markdown of the subset above) as a self-contained HTML page."""
    body = []
    for block in _blocks(text):
        first = block[0]
        heading = re.match(r"(#{1,6}) (.*)", first)
        if heading and len(block) == 1:
            level = len(heading.group(1))
            body.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif first.lstrip().startswith("|") and len(block) > 1 and set(block[1]) <= set("|-: "):
            body.append(_table(block))
        elif all(line.startswith("- ") or line.startswith("  ") for line in block):
            items, item = [], []
            for line in block:
                if line.startswith("- ") and item:
                    items.append(" ".join(item))
                    item = []
                item.append(line[2:].strip())
            items.append(" ".join(item))
            body.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
        else:
            body.append(f"<p>{_inline(' '.join(line.strip() for line in block))}</p>")
    return _page(title, body, style)


def csv_html(text: str, title: str, intro: str = "", style: str = TABLE_STYLE) -> str:
    """``text`` (a CSV table with a header row) as a self-contained HTML page: ``title``
    as its heading, ``intro`` as a paragraph, then every row, each cell escaped as written."""
    rows = list(csv.reader(io.StringIO(text)))
    body = [f"<h1>{html.escape(title)}</h1>"]
    if intro:
        body.append(f"<p>{html.escape(intro)}</p>")
    if rows:
        head, rest = rows[0], rows[1:]
        table = ["<table>", "<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>"]
        table += [
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rest
        ]
        body.append("\n".join([*table, "</table>"]))
    return _page(title, body, style)
