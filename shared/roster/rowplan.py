"""Planning one employee's row under cell costs so that it keeps every hard rule of the row.

The rules that tie a day to its neighbours (runs, rest between runs, rotation, fixed days off)
are a small state machine (`Machine`). A backward pass over the days (`reach`) computes, for
every day and state, the set of work totals (and worked weekends) the rest of the row can
still add, as a bitset, so a forward pass never takes a step after which the minimum and
maximum minutes or the weekend limit can no longer be met: the planner finds a row whenever one
exists (`tests/test_greedy_rules.py` checks this against brute force). The forward pass is a
beam search, or a single walk, ranked by the cost so far plus a cost-to-go of the machine alone
(`cost_to_go`), where prices per unit of work and per worked weekend stand in for the minutes
and the weekend limit. The per-type maxima are counted by the forward pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from shared.roster.rowrules import OFF, RowRules


class Machine:
    """The rules that tie a day to its neighbours, for one contract, as a state machine: the
    state after a day says what the row did lately, a move is the next day's value.

    States: 0 = free (off long enough, or off since day 0: anything may follow); k = 1 ..
    min_off-1 = off for k days after a run (must stay off); then one state per (run length
    r = 1..max_consec, rotation class of the last shift), at `n_off + (r-1) * n_cls + class`. A
    type's rotation class is its row of `forbidden` among the employee's types, so the types of
    a class allow the same successors. Types that agree on class, on the classes they may
    follow and on length form a group: the machine moves by group, the walk picks the type
    inside it (by cost, within its maximum). A run shorter than the minimum may only end if it
    started on day 0 (`short`); off after a run is allowed from run length `min_consec` on.
    """

    def __init__(
        self,
        types: tuple[int, ...],
        units: list[int],
        forbidden: list[list[int]],
        max_consec: int,
        min_consec: int,
        min_off: int,
    ) -> None:
        classes: dict[tuple[int, ...], int] = {}
        cls = {
            s: classes.setdefault(tuple(forbidden[s][t] for t in types), len(classes))
            for s in types
        }
        rep = {c: s for s, c in reversed(list(cls.items()))}
        self.n_cls = n_cls = len(classes)
        grouped: dict[tuple[int, tuple[bool, ...], int], list[int]] = {}
        for s in types:
            follows = tuple(not forbidden[rep[c]][s] for c in range(n_cls))
            grouped.setdefault((cls[s], follows, units[s]), []).append(s)
        self.types = types
        self.groups = [tuple(g) for g in grouped.values()]
        self.group_units = [key[2] for key in grouped]
        self.group_cls = [key[0] for key in grouped]
        self.max_units = max(self.group_units, default=0)
        self.max_consec, self.min_consec = max_consec, min_consec
        self.n_off = n_off = max(min_off, 1)
        self.n = n_off + max_consec * n_cls
        self.after_run = 1 if n_off > 1 else 0  # the state a run's first day off enters
        allowed = [[g for g, key in enumerate(grouped) if key[1][c]] for c in range(n_cls)]
        self.chain = self._chain(allowed)

        def work(r: int, c: int) -> int:
            return n_off + (r - 1) * n_cls + c

        # Per state: the state an off day leads to, the run length below the minimum (0 if
        # none), and the moves (group, next state) a work day may take.
        self.off_next = [0] + [0 if k + 1 >= n_off else k + 1 for k in range(1, n_off)]
        self.short = [0] * n_off
        self.moves: list[list[tuple[int, int]]] = [[] for _ in range(self.n)]
        self.moves[0] = [(g, work(1, key[0])) for g, key in enumerate(grouped)]
        for r in range(1, max_consec + 1):
            for c in range(n_cls):
                self.off_next.append(self.after_run)
                self.short.append(r if r < min_consec else 0)
                if r < max_consec:
                    self.moves[work(r, c)] = [
                        (g, work(r + 1, self.group_cls[g])) for g in allowed[c]
                    ]

    @staticmethod
    def _chain(allowed: list[list[int]]) -> list[tuple[int, int, list[int]]]:
        """An order of the classes in which each one's successor groups are an earlier class's
        (`base`, -1 for none) plus a few more: rotation by minimum rest makes these sets
        nested, so a combination over a class's successors costs about one step per class."""
        order = sorted(range(len(allowed)), key=lambda c: len(allowed[c]))
        out: list[tuple[int, int, list[int]]] = []
        done: list[int] = []
        for c in order:
            mine = set(allowed[c])
            base, size = -1, 0
            for b in done:
                theirs = set(allowed[b])
                if theirs <= mine and len(theirs) > size:
                    base, size = b, len(theirs)
            extra = sorted(mine - set(allowed[base])) if base >= 0 else sorted(mine)
            out.append((c, base, extra))
            done.append(c)
        return out


# Machines outlive a solve: a service solves many small requests with the same contracts.
_MACHINES: dict[tuple[Any, ...], Machine] = {}
_MACHINES_MAX = 1024


def machine(
    types: tuple[int, ...],
    units: list[int],
    forbidden: list[list[int]],
    max_consec: int,
    min_consec: int,
    min_off: int,
) -> Machine:
    key = (
        types,
        tuple(units[s] for s in types),
        tuple(tuple(forbidden[s][t] for t in types) for s in types),
        max_consec,
        min_consec,
        min_off,
    )
    m = _MACHINES.get(key)
    if m is None:
        m = Machine(types, units, forbidden, max_consec, min_consec, min_off)
        if len(_MACHINES) >= _MACHINES_MAX:
            _MACHINES.clear()
        _MACHINES[key] = m
    return m


def reach(
    m: Machine,
    free: list[bool],
    full: int,
    weekend_shift: tuple[list[int], list[int]] | None = None,
    gone: frozenset[int] = frozenset(),
    start: int = 0,
) -> list[list[int]]:
    """R[d][state]: bitset of the work that days d.. can still add from `state` (entered after
    day d-1) while keeping every rule of the machine; bits outside `full` are dropped.

    Bit b is b work units; with `weekend_shift`, bit w * stride + b is b units on w more worked
    weekends: working day d from the free state adds weekend_shift[0][d] to the bit index,
    from a work state weekend_shift[1][d] (a Sunday after a worked Saturday adds nothing).
    Groups in `gone` (their types used up) are not taken; days before `start` stay unset."""
    days = len(free)
    n, n_off, n_cls, after_run = m.n, m.n_off, m.n_cls, m.after_run
    max_c, min_c = m.max_consec, m.min_consec
    live = [g for g in range(len(m.groups)) if g not in gone]
    units, gcls, chain = m.group_units, m.group_cls, m.chain
    from_free, from_work = weekend_shift if weekend_shift else ([0] * days, [0] * days)
    nxt = [1] * n
    out = [nxt] * (days + 1)
    blank = [0] * len(m.groups)
    for d in range(days - 1, start - 1, -1):
        cur = [0] * n
        for k in range(1, n_off):
            cur[k] = nxt[0 if k + 1 >= n_off else k + 1]
        rest = nxt[after_run]
        work = free[d]
        acc = nxt[0]
        if work:
            e = from_free[d]
            for g in live:
                acc |= nxt[n_off + gcls[g]] << (units[g] + e)
            e = from_work[d]
        cur[0] = acc & full
        for r in range(1, max_c + 1):
            first = n_off + (r - 1) * n_cls
            o = rest if r >= min_c or r == d else 0
            if work and r < max_c:
                nb = first + n_cls
                sh = list(blank)
                for g in live:
                    sh[g] = nxt[nb + gcls[g]] << (units[g] + e)
                ors = [0] * n_cls
                for c, b, extra in chain:
                    v = ors[b] if b >= 0 else 0
                    for g in extra:
                        v |= sh[g]
                    ors[c] = v
                    cur[first + c] = (v | o) & full
            elif o:
                for c in range(n_cls):
                    cur[first + c] = o
        out[d] = nxt = cur
    return out


def cost_to_go(
    m: Machine,
    free: list[bool],
    off_cost: list[float],
    group_cost: list[list[float]],
    alive: list[list[int]],
    weekend_cost: tuple[list[float], list[float]] | None = None,
) -> list[list[float]]:
    """V[d][state]: least cost of days d.. from `state` under the machine alone (no minutes),
    through states that can still finish (nonzero in `alive`, the bitsets of `reach`).
    `weekend_cost` adds a price for starting a worked weekend on day d, from the free state
    ([0][d]) or from a run ([1][d]): it stands in for the limit on weekends."""
    days = len(free)
    no_price = [0.0] * days
    from_free, from_work = weekend_cost if weekend_cost else (no_price, no_price)
    n, n_off, n_cls, after_run = m.n, m.n_off, m.n_cls, m.after_run
    max_c, min_c = m.max_consec, m.min_consec
    gcls, chain = m.group_cls, m.chain
    n_groups = len(m.groups)
    inf = math.inf
    nxt = [0.0] * n
    out = [nxt] * (days + 1)
    for d in range(days - 1, -1, -1):
        cur = [inf] * n
        co, gc = off_cost[d], group_cost[d]
        for k in range(1, n_off):
            cur[k] = co + nxt[0 if k + 1 >= n_off else k + 1]
        rest = co + nxt[after_run]
        work = free[d]
        best = co + nxt[0]
        if work:
            wf = from_free[d]
            for g in range(n_groups):
                v = gc[g] + wf + nxt[n_off + gcls[g]]
                if v < best:
                    best = v
        cur[0] = best
        ww = from_work[d]
        for r in range(1, max_c + 1):
            first = n_off + (r - 1) * n_cls
            o = rest if r >= min_c or r == d else inf
            if work and r < max_c:
                nb = first + n_cls
                val = [gc[g] + ww + nxt[nb + gcls[g]] for g in range(n_groups)]
                mins = [inf] * n_cls
                for c, b, extra in chain:
                    v = mins[b] if b >= 0 else inf
                    for g in extra:
                        if val[g] < v:
                            v = val[g]
                    mins[c] = v
                    cur[first + c] = v if v < o else o
            else:
                for c in range(n_cls):
                    cur[first + c] = o
        live = alive[d]
        for st in range(n):
            if not live[st]:
                cur[st] = inf
        out[d] = nxt = cur
    return out


# Attempts of a plan, each without the types whose maximum stopped the one before.
RETRIES = 4
# Cost per shift of falling one shift behind an even spread of the minutes over the free days.
PACE = 10.0
# Weekends are tracked exactly by the reach (one bitset row per weekend) up to this many bits;
# beyond it the plan first tries a fixed choice of weekends, which is far cheaper.
TRACK_BITS = 12_000
# A walk looks at the cancel flag and the clock every this many days.
HALT_DAYS = 32


class RowPlanner:
    """Plans one employee's row under given cell costs, keeping every hard rule of the row.

    Finds a row whenever one exists for the rules of the machine, fixed days off, weekends and
    the minimum and maximum minutes (through `reach`): weekends are tracked by the reach, or,
    when that would take too many bits (`TRACK_BITS`), first fixed before it (the most useful
    ones, then evenly spread) and tracked only if neither fixed choice leaves a row. The
    per-type maxima are counted by the forward pass; a walk that runs out of a type tries again
    without the types to blame (`RETRIES` times) before it gives up (returns None)."""

    def __init__(self, r: RowRules, m: Machine, unit: int, weekend_days: list[list[int]]) -> None:
        self.r, self.m = r, m
        self.days = days = len(r.day_off)
        self.min_u = min_u = -(-r.min_minutes // unit)
        self.max_u = max_u = min(r.max_minutes // unit, days * m.max_units)
        self.weekend_days = weekend_days
        self.fixed_free = [not x for x in r.day_off]
        self.group_types = [list(g) for g in m.groups]
        self.units = np.array(m.group_units, dtype=np.float64)
        units_mask = (1 << (max_u + 1)) - 1 if max_u >= 0 else 0
        # Bits b of a state's bitset with acc + b inside [min_u, max_u]: `window >> acc`.
        self.window = units_mask ^ ((1 << min_u) - 1) if min_u <= max_u else 0
        workable = sum(1 for days_w in weekend_days if any(self.fixed_free[d] for d in days_w))
        self.limit_w = limit = r.max_weekends
        # Padding above max_u keeps a shifted bit from spilling into the next weekend row.
        self.stride = stride = max_u + 1 + m.max_units
        self.tracked = limit < workable and (limit + 1) * stride <= TRACK_BITS
        self.needs_weekends = limit < workable
        self.full_untracked = units_mask
        self.full_tracked = sum(units_mask << (w * stride) for w in range(limit + 1))
        weekend = r.weekend
        self.weekend_shift = (
            [stride if weekend[d] >= 0 else 0 for d in range(days)],
            [
                stride if weekend[d] >= 0 and (d == 0 or weekend[d - 1] != weekend[d]) else 0
                for d in range(days)
            ],
        )
        self._tiles: dict[int, int] = {}
        self.blamed: frozenset[int] = frozenset()
        # Asked every few days of a walk: a cancelled solve must not wait for a long plan.
        self.halt: Callable[[], bool] = lambda: False

    def tile(self, acc: int) -> int:
        """Bits w * stride + b with acc + b inside the window, for every weekend row w."""
        t = self._tiles.get(acc)
        if t is None:
            base = self.window >> acc
            t = self._tiles[acc] = sum(base << (w * self.stride) for w in range(self.limit_w + 1))
        return t

    def free_days(self, allowed: list[bool]) -> list[bool]:
        free = list(self.fixed_free)
        for w, ok in enumerate(allowed):
            if not ok:
                for d in self.weekend_days[w]:
                    free[d] = False
        return free

    def price(self, gain: Any, free: list[bool]) -> float:
        """A cost per work unit that makes about as many units worth working as the row
        needs: the machine's cost-to-go knows nothing of the minutes otherwise."""
        best = gain / self.units[None, :]
        g = best.argmin(axis=1)
        per_unit = best[np.arange(self.days), g]
        units = self.units[g]
        mask = np.array(free, dtype=bool)
        order = np.argsort(per_unit[mask], kind="stable")
        cum = np.cumsum(units[mask][order])
        if not len(cum):
            return 0.0
        profitable = int(np.searchsorted(per_unit[mask][order], 0.0))
        have = cum[profitable - 1] if profitable else 0.0
        if have < self.min_u:
            target = self.min_u
        elif have > self.max_u:
            target = self.max_u
        else:
            return 0.0
        i = min(int(np.searchsorted(cum, target)), len(cum) - 1)
        return float(-per_unit[mask][order][i])

    def weekend_price(self, gain: Any, free: list[bool]) -> float:
        """A price for each worked weekend that leaves about `max_weekends` of them worth it:
        the value of the best weekend past the limit (working both days of a weekend, or the
        better one, against having it off)."""
        day_value = np.maximum(0.0, -gain.min(axis=1))
        values = sorted(
            (float(sum(day_value[d] for d in days if free[d])) for days in self.weekend_days),
            reverse=True,
        )
        return values[self.limit_w] if self.limit_w < len(values) else 0.0

    def weekends(self, gain: Any, jitter: Any) -> list[bool]:
        """The weekends a plan with fixed weekends may work: the `max_weekends` most useful."""
        n = len(self.weekend_days)
        day_gain = np.maximum(0.0, -gain.min(axis=1))
        benefit = [float(sum(day_gain[d] for d in days)) for days in self.weekend_days]
        order = sorted(range(n), key=lambda w: (-benefit[w], jitter[w]))
        allowed = [False] * n
        for w in order[: self.limit_w]:
            allowed[w] = True
        return allowed

    def spread(self) -> list[bool]:
        """Weekends evenly spaced: the fallback when the most useful ones leave no feasible row."""
        n, limit = len(self.weekend_days), self.limit_w
        allowed = [False] * n
        for i in range(limit):
            allowed[(i * n) // max(limit, 1)] = True
        return allowed

    def reach_of(self, free: list[bool], tracked: bool, gone: frozenset[int]) -> list[list[int]]:
        if tracked:
            return reach(self.m, free, self.full_tracked, self.weekend_shift, gone)
        return reach(self.m, free, self.full_untracked, None, gone)

    def finishable(self, rs: list[list[int]], tracked: bool) -> bool:
        return bool(rs[0][0] & (self.tile(0) if tracked else self.window))

    def oracle(
        self, gain: Any, jitter: Any, gone: frozenset[int]
    ) -> tuple[list[bool], list[list[int]], bool] | None:
        """The free days, the reach and whether it tracks weekends, for a feasible plan."""
        if not self.needs_weekends:
            rs = self.reach_of(self.fixed_free, False, gone)
            return (self.fixed_free, rs, False) if self.finishable(rs, False) else None
        if not self.tracked:
            for allowed in (self.weekends(gain, jitter), self.spread()):
                free = self.free_days(allowed)
                rs = self.reach_of(free, False, gone)
                if self.finishable(rs, False):
                    return free, rs, False
        rs = self.reach_of(self.fixed_free, True, gone)
        return (self.fixed_free, rs, True) if self.finishable(rs, True) else None

    def plan(self, cost: Any, off_cost: Any, jitter: Any, width: int = 1) -> list[int] | None:
        """The row for cell costs cost[d, s] (work) and off_cost[d] (day off), or None.

        A beam search of `width` rows (`beam`) when width > 1, else (or when the beam dies out)
        the single walk. When the walk runs into a dead end because a group's maximum ran out,
        the next attempt plans without the groups to blame: a row that needs none of them
        cannot get stuck on them (one that needs them gets None; the caller keeps its row)."""
        m = self.m
        if not m.groups:  # eligible for nothing: the empty row, if it has no minimum to meet
            return [OFF] * self.days if self.min_u == 0 else None
        kappa = np.stack([cost[:, g].min(axis=1) for g in self.group_types], axis=1)
        gain = kappa - off_cost[:, None]
        offc = off_cost.tolist()
        cells = cost.tolist()
        gone: frozenset[int] = frozenset()
        for _ in range(RETRIES):
            found = self.oracle(gain, jitter, gone)
            if found is None:
                return None
            free, rs, tracked = found
            p = self.price(gain, free)
            group_cost = kappa + p * self.units[None, :]
            lam = self.weekend_price(group_cost - off_cost[:, None], free) if tracked else 0.0
            if gone:
                group_cost[:, sorted(gone)] = math.inf
            from_free, from_work = self.weekend_shift
            wk_cost = ([lam * (x > 0) for x in from_free], [lam * (x > 0) for x in from_work])
            vs = cost_to_go(m, free, offc, group_cost.tolist(), rs, wk_cost)
            if width > 1 and not gone:
                row = self.beam(rs, vs, free, cells, offc, p, tracked, width, lam)
                if row is not None:
                    return row
            row = self.walk(rs, vs, free, cells, offc, p, tracked, gone, lam)
            if row is not None:
                return row
            if self.blamed <= gone:
                return None
            gone |= self.blamed
        return None

    def beam(
        self,
        rs: list[list[int]],
        vs: list[list[float]],
        free: list[bool],
        cost: list[list[float]],
        off_cost: list[float],
        p: float,
        tracked: bool,
        width: int,
        lam: float = 0.0,
    ) -> list[int] | None:
        """The walk with `width` partial rows kept per day, ranked by cost so far plus
        cost-to-go (both with the prices per work unit and weekend the cost-to-go was made
        with), the cheapest finished row by its cost alone; rows that agree on state, work
        total and weekends are merged (the cheaper stays). Each partial row counts its shifts
        per group against the group's maximum; the types inside a group are shared out
        afterwards (`share_types`)."""
        m = self.m
        off_next, short, moves, units = m.off_next, m.short, m.moves, m.group_units
        types, caps = self.group_types, self.r.max_shifts
        gcap = [sum(caps[s] for s in g) for g in types]
        stride, limit = self.stride, self.limit_w
        if tracked:
            tile = self.tile
            from_free, from_work = self.weekend_shift
        else:
            win = self.window
            from_free = from_work = [0] * self.days
        inf = math.inf
        # (cost so far, state, work units, weekends, shifts per group, path)
        Node = tuple[float, int, int, int, tuple[int, ...], Any]
        beam: list[Node] = [(0.0, 0, 0, 0, (0,) * len(types), None)]
        halt = self.halt
        for d in range(self.days):
            if d % HALT_DAYS == 0 and halt():
                return None
            rn, vn = rs[d + 1], vs[d + 1]
            cd, co = cost[d], off_cost[d]
            best_type = []
            for g in types:
                s_best = min(g, key=cd.__getitem__)
                best_type.append((s_best, cd[s_best]))
            kids: dict[tuple[int, int, int], tuple[float, Node]] = {}
            for g0, st, acc, used, cnt, path in beam:
                k = short[st]
                if k == 0 or k == d:
                    dst = off_next[st]
                    if tracked:
                        fit = tile(acc) & ((1 << ((limit - used + 1) * stride)) - 1)
                    else:
                        fit = win >> acc
                    if rn[dst] & fit:
                        f = g0 + co + p * acc + lam * used + vn[dst]
                        key = (dst, acc, used)
                        old = kids.get(key)
                        if old is None or f < old[0]:
                            kids[key] = (f, (g0 + co, dst, acc, used, cnt, (OFF, path)))
                if not free[d]:
                    continue
                w = 1 if (from_free[d] if st == 0 else from_work[d]) else 0
                if tracked and used + w > limit:
                    continue
                for grp, dst in moves[st]:
                    if cnt[grp] >= gcap[grp]:
                        continue
                    u = units[grp]
                    if tracked:
                        fit = tile(acc + u) & ((1 << ((limit - used - w + 1) * stride)) - 1)
                    else:
                        fit = win >> (acc + u)
                    if not rn[dst] & fit:
                        continue
                    s, c = best_type[grp]
                    g1 = g0 + c
                    f = g1 + p * (acc + u) + lam * (used + w) + vn[dst]
                    key = (dst, acc + u, used + w)
                    old = kids.get(key)
                    if old is None or f < old[0]:
                        c2 = (*cnt[:grp], cnt[grp] + 1, *cnt[grp + 1 :])
                        kids[key] = (f, (g1, dst, acc + u, used + w, c2, (s, path)))
            if not kids:
                return None
            if len(kids) > width:
                beam = [x[1] for x in sorted(kids.values(), key=lambda x: x[0])[:width]]
            else:
                beam = [x[1] for x in kids.values()]
        top = min(beam, key=lambda x: x[0]) if beam else None
        if top is None or top[0] == inf:
            return None
        row: list[int] = []
        node = top[5]
        while node is not None:
            row.append(node[0])
            node = node[1]
        row.reverse()
        return self.share_types(row, cost)

    def share_types(self, row: list[int], cost: list[list[float]]) -> list[int] | None:
        """Keep each type within its maximum by moving its dearest days to other types of its
        group (same rotation, same length), or None if the group has no room left."""
        caps = self.r.max_shifts
        counts: dict[int, int] = {}
        for s in row:
            if s >= 0:
                counts[s] = counts.get(s, 0) + 1
        over = [s for s, n in counts.items() if n > caps[s]]
        if not over:
            return row
        group_of = {s: g for g in self.group_types for s in g}
        for s in over:
            days = sorted((d for d, v in enumerate(row) if v == s), key=lambda d: -cost[d][s])
            for d in days[: counts[s] - caps[s]]:
                room = [t for t in group_of[s] if counts.get(t, 0) < caps[t]]
                if not room:
                    return None
                t = min(room, key=cost[d].__getitem__)
                row[d] = t
                counts[t] = counts.get(t, 0) + 1
                counts[s] -= 1
        return row

    def walk(
        self,
        rs: list[list[int]],
        vs: list[list[float]],
        free: list[bool],
        cost: list[list[float]],
        off_cost: list[float],
        p: float,
        tracked: bool,
        gone: frozenset[int] = frozenset(),
        lam: float = 0.0,
    ) -> list[int] | None:
        """Day by day, the value of least cost plus cost-to-go among those that keep the row
        finishable. Taking the last shift a group has left is checked against the reach of
        the row without that group (which the walk then follows), so running out of a type
        leads into no dead end the reach can see."""
        m = self.m
        off_next, short, moves, units, types = (
            m.off_next,
            m.short,
            m.moves,
            m.group_units,
            self.group_types,
        )
        caps = self.r.max_shifts
        counts = [0] * len(caps)
        left = [sum(caps[s] for s in g) for g in types]
        stride = self.stride
        if tracked:
            tile, limit = self.tile, self.limit_w
            full, wshift = self.full_tracked, self.weekend_shift
            from_free, from_work = wshift
        else:
            win = self.window
            full, wshift = self.full_untracked, None
            from_free = from_work = [0] * self.days
        inf = math.inf
        row = [OFF] * self.days
        st = acc = used = 0
        # Where the work total should be by each day if spread over the free days: falling
        # behind makes work cheaper, so the row does not reach its last weeks short of minutes.
        n_free = max(1, sum(free))
        pace_cost = PACE / max(1.0, float(self.units.mean()) if len(self.units) else 1.0)
        target = (self.min_u + self.max_u) / 2 if self.min_u else 0.0
        pace, seen = [], 0
        for f in free:
            pace.append(target * seen / n_free)
            seen += f

        halt = self.halt
        for d in range(self.days):
            if d % HALT_DAYS == 0 and halt():
                self.blamed = frozenset()
                return None
            rn, vn = rs[d + 1], vs[d + 1]
            if tracked:
                low = (1 << ((limit - used + 1) * stride)) - 1
                fit_off = tile(acc) & low
            else:
                fit_off = win >> acc
            best, best_v, best_st, best_u, best_g, best_w = inf, -2, 0, 0, -1, 0
            push = pace_cost * (pace[d] - acc)
            k = short[st]
            if k == 0 or k == d:
                dst = off_next[st]
                if rn[dst] & fit_off:
                    best, best_v, best_st = off_cost[d] + vn[dst], OFF, dst
            last: list[tuple[float, int, int, int, int, int]] = []
            if free[d]:
                cd = cost[d]
                w = 1 if (from_free[d] if st == 0 else from_work[d]) else 0
                for g, dst in moves[st]:
                    if g in gone:
                        continue
                    u = units[g]
                    if tracked:
                        if used + w > limit:
                            break
                        fit = tile(acc + u) & ((1 << ((limit - used - w + 1) * stride)) - 1)
                    else:
                        fit = win >> (acc + u)
                    if not rn[dst] & fit:
                        continue
                    s_best, c_best = -1, inf
                    for s in types[g]:
                        if counts[s] < caps[s] and cd[s] < c_best:
                            s_best, c_best = s, cd[s]
                    score = c_best + p * u + lam * w + vn[dst] - push
                    if left[g] == 1:
                        last.append((score, s_best, dst, u, g, w))
                    elif score < best:
                        best, best_v, best_st, best_u, best_g, best_w = score, s_best, dst, u, g, w
                for score, s, dst, u, g, w in sorted(last):
                    if score >= best:
                        break
                    # The group's last shift: taken only if the row can finish without it.
                    without = reach(m, free, full, wshift, gone | {g}, d + 1)
                    if tracked:
                        fit = tile(acc + u) & ((1 << ((limit - used - w + 1) * stride)) - 1)
                    else:
                        fit = win >> (acc + u)
                    if without[d + 1][dst] & fit:
                        best, best_v, best_st, best_u, best_g, best_w = score, s, dst, u, g, w
                        rs, gone = without, gone | {g}
                        break
            if best_v == -2:
                # Blame the groups that ran out, or would have with the shift refused above.
                self.blamed = frozenset(g for g, n in enumerate(left) if n <= 1)
                return None
            row[d] = best_v
            if best_v >= 0:
                counts[best_v] += 1
                left[best_g] -= 1
            st, acc, used = best_st, acc + best_u, used + best_w
        return row
