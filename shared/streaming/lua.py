"""Redis scripts, kept as `.lua` files beside the module that runs them.

`script(__file__, "promote_due")` reads `promote_due.lua` next to the calling module, once per
process: the Lua stays readable (and diffable) as Lua, and the code that runs it is one file
away.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path


@cache
def script(beside: str, name: str) -> str:
    """The text of `<name>.lua` in the folder of the module file `beside`."""
    return Path(beside).with_name(f"{name}.lua").read_text()
