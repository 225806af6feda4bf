"""The console's settings: the services' own (`REDIS_URL`, `SHIFTSTREAM_PREFIX`, stream names,
the trace file) plus where it listens and who may act."""

from __future__ import annotations

from pydantic import Field, SecretStr

from shared.settings import Settings


class ConsoleSettings(Settings):
    # Loopback unless told otherwise: the page shows every job's roster and error.
    console_host: str = "127.0.0.1"
    console_port: int = Field(default=8780, ge=0, le=65535)
    # Without a token the console is read-only: cancel, replay, purge and submit are refused.
    console_token: SecretStr | None = None
    # How often the overview is sampled and pushed to open pages.
    console_refresh_seconds: float = Field(default=2.0, gt=0, le=60)
    # Seconds of terminal events behind jobs/min, fallback rate and the percentiles.
    console_window_seconds: float = Field(default=300.0, ge=10, le=3600)
    # Where the job page links when spans go to a collector (OTEL_EXPORTER_OTLP_ENDPOINT).
    jaeger_ui_url: str = "http://localhost:16686"

    @property
    def token(self) -> str | None:
        if self.console_token is None:
            return None
        value = self.console_token.get_secret_value()
        return value or None
