"""Entry point of the `shiftstream` console script.

Each command group lives in its own module and registers itself on `app`; this file only
assembles them, so commands for the roster core and for the job system grow independently.
`CliGroup` turns expected Redis failures of any command into one line and an exit code.
"""

from __future__ import annotations

import typer

from shared.cli.exits import epilog
from shared.cli.redis_target import CliGroup

app = typer.Typer(
    name="shiftstream",
    cls=CliGroup,
    help="Workforce rosters: solve locally, or submit to and watch the ShiftStream services. "
    "Redis: --redis-url, else REDIS_URL, else localhost:6379 (dev and demo start an embedded "
    "server when none answers).",
    epilog=epilog(),
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


def _register() -> None:
    from shared.cli import jobs, ops, repair, roster

    roster.register(app)
    repair.register(app)
    jobs.register(app)
    ops.register(app)


_register()

if __name__ == "__main__":
    app()
