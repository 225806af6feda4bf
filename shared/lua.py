"""The Lua scripts kept as .lua files beside this module, loaded once per process."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def source(name: str) -> str:
    return resources.files("shared").joinpath("scripts", f"{name}.lua").read_text()
