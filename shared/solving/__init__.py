"""Solving a job: what the solver and the fallback services share.

Owns the watched solve (`run`: progress, cancel, shutdown hand-back, leases), the outcome
records a solve ends with (`report`), running the C solver in a child process so a crash costs
one attempt (`isolation`), progress throttling and messages (`progress`), and the dispatch from
an implementation name to a solver with its scored result (`dispatch`).

May import `jobs`, `streaming`, `observability`, `settings`, `names`, `errors`, `roster` and
`csolver`; never `cli`.
"""
