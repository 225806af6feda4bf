"""Entry point of the `shiftstream` console script.

Each command group lives in its own module and registers itself on `app`; this file only
assembles them, so commands for the roster core and for the job system grow independently.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="shiftstream",
    help="Workforce rosters: solve locally, or submit to and watch the ShiftStream services.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


def _register() -> None:
    from shared.cli import jobs, ops, roster

    roster.register(app)
    jobs.register(app)
    ops.register(app)


_register()

if __name__ == "__main__":
    app()
