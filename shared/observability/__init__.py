"""Observability: what a service tells about itself.

Owns span helpers (`tracing`: the entry's consume span, job attributes, the solve span), the
tracer provider (`telemetry`: OTLP/HTTP, an OTLP JSON-lines file, or none), metrics
(`metrics`), JSON logs joined to traces and jobs (`logs`), the health probe (`health`) and queue
statistics read from Redis (`queue_stats`).

May import `settings`, `names`, `text`; nothing else of the project.
"""
