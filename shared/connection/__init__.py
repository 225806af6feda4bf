"""Connections to Redis: one server, Sentinel or Cluster, with or without TLS.

`factory` builds every client and broker from the settings (docs/managed-redis.md); `packing`
sends commands encoded by hiredis; `timed` bounds each round trip; `durable` makes a write wait
for replicas before a client may see what depends on it (docs/decisions/0012).

Sits just above settings: observability (health, queue statistics), streaming, jobs and the
CLI all import it; it imports nothing of theirs.
"""
