"""What several ShiftStream services use, grouped by concern.

Dependencies point one way, from the top of this list to the bottom; nothing here imports
`services`, and there are no import cycles:

- `cli`: the command line, the dev runner and the trace waterfall (imports anything below);
- `solving`: the watched solve the solver and fallback share, crash isolation, progress,
  dispatch to a solver implementation;
- `jobs`: the job lifecycle kept in Redis: the internal records (`messages`), job records,
  idempotency, leases, the delay schedule, dead letters, poison reactions, the public
  event contract, and a Python client of the public streams;
- `streaming`: the transport: broker factory, batched hops and the poison rule, the entry
  codec, Redis clients and connections, Lua loading, the service runner;
- `observability`: tracing, metrics, logs, health probes, queue statistics;
- `settings`, `names`, `errors`, `text`: configuration, every stream and key name, the
  project's exceptions with their error classes, and Redis replies as text;
- `roster`: the roster domain (models, rules, evaluator, greedy solver, Curtois format), which
  imports nothing of the above but `errors`.

`contracts` generates the published JSON Schemas and AsyncAPI document from the models.
"""
