"""`python -m services.console`: the console on CONSOLE_HOST:CONSOLE_PORT (127.0.0.1:8780)."""

from __future__ import annotations

import uvicorn

from services.console.app import build
from services.console.config import ConsoleSettings
from shared.observability.logs import configure_logging


def main() -> None:
    settings = ConsoleSettings()
    configure_logging("console")
    uvicorn.run(
        build(settings),
        host=settings.console_host,
        port=settings.console_port,
        log_level="warning",
        # Open pages hold server-sent event streams: let a stop end them quickly.
        timeout_graceful_shutdown=3,
    )


if __name__ == "__main__":
    main()
