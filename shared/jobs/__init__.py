"""The job lifecycle as it is kept in Redis.

Owns the internal stream records (`messages`), the job record hash (`records`), idempotency
keys (`idempotency`), leases on long-held entries (`lease`), the delay schedule (`schedule`,
with `promote_due.lua`), dead letters for operators (`dead_letters`, with `replay_keys.lua`
and `replay_guard.lua`), what a hop does with a poison entry (`poison`), the public stream
contract (`events`), and a small Python client of the public streams (`client`).

May import `streaming`, `connection`, `observability`, `settings`, `names`, `errors`, `text`,
`roster`;
never `solving` or `cli`.
"""
