"""Run a service on uvloop; FastStream's app handles SIGTERM/SIGINT with a graceful drain."""

from __future__ import annotations

import logging

import uvloop
from faststream import FastStream


def run(app: FastStream) -> None:
    # `faststream run` picks uvloop itself, plain asyncio.run does not (VERIFIED.md).
    uvloop.run(app.run(log_level=logging.INFO))
