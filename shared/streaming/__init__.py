"""The transport: how a service reads, writes and acknowledges stream entries.

Owns the broker and app factory (`broker`: groups created at id 0, a reader and a reclaimer per
hop, graceful shutdown), batched hops and the poison rule (`hop`), the entry codec (`codec`),
the Redis client with per-round-trip timeouts (`redis_client`, `redis_connection`), Lua loading
(`lua`), and the service process runner (`runner`, `gc_tuning`).

May import `settings`, `names`, `text`, `observability`; never `jobs`, `solving` or `cli`.
"""
