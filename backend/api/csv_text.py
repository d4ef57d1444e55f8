"""The one way the API writes CSV: RFC 4180 text (CRLF rows) whose cells a spreadsheet cannot run as formulas.

A text cell that starts with ``= + - @``, a tab or a carriage return is a formula (or can become one) to
Excel, LibreOffice and Google Sheets: a project named ``=HYPERLINK("http://x.example/?leak","y")`` in an
exported audit trail would be a live link. Such a cell gets the usual single-quote prefix (OWASP's advice),
which spreadsheets show as text. Numbers are written as numbers: -0.5 stays a number.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> object:
    """`value` as a spreadsheet must take it: a text starting like a formula is prefixed with a quote."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_text(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    """CSV text: the header row, then `rows`, every text cell made safe by `safe_cell`."""
    out = io.StringIO()
    # RFC 4180's CRLF: with "\n" alone the writer would not quote a cell holding a bare "\r", which readers
    # take as the end of the row.
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([safe_cell(name) for name in header])
    writer.writerows([safe_cell(value) for value in row] for row in rows)
    return out.getvalue()
