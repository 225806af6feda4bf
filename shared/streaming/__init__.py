"""The transport: how a service reads, writes and acknowledges stream entries.

Owns the broker and app factory (`broker`: groups created at id 0, a reader and a reclaimer per
hop, graceful shutdown), batched hops and the poison rule (`hop`), the entry codec (`codec`),
Lua loading (`lua`), and the service process runner (`runner`, `gc_tuning`). Its Redis clients
come from `shared.connection`.

May import `settings`, `names`, `text`, `connection`, `observability`; never `jobs`, `solving`
or `cli`.
"""
