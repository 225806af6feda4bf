"""What a terminal shows once a program's output has run: the cursor moves and erases rich
uses for a live line applied, so a line drawn and then erased is not there. Enough of a VT100
for rich's live display (carriage return, newline, erase line, cursor up); every other escape
sequence is dropped."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\r|\n|[^\x1b\r\n]+")


def screen_lines(raw: str) -> list[str]:
    """The non-blank lines left on the screen after `raw`, top to bottom."""
    lines: list[str] = [""]
    row = col = 0
    for match in _TOKEN.finditer(raw):
        token = match.group(0)
        if token == "\r":
            col = 0
        elif token == "\n":
            row, col = row + 1, 0
            if row == len(lines):
                lines.append("")
        elif match.group(2) == "K":  # erase in line: rich erases whole lines
            lines[row] = ""
        elif match.group(2) == "A":  # cursor up
            row = max(0, row - int(match.group(1) or 1))
        elif match.group(2) is None:
            line = lines[row].ljust(col)
            lines[row] = line[:col] + token + line[col + len(token) :]
            col += len(token)
    return [line.rstrip() for line in lines if line.strip()]
