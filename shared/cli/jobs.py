"""Job-system commands; placeholder until the services engineer adds theirs."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Nothing to add yet."""
