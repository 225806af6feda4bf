/* The roster's score with its reasons: every broken rule instance as one gr_match record, plus
 * the tallies a result shows (minutes and shifts per employee, cover per day and type).
 *
 * The same rules and counting as score.c and shared/roster/rules.py, written out once more
 * because the records carry what the Python evaluator's matches say (days, shifts, figures):
 * at 5,000 x 366 the Python rules took 1-2.5 s to walk the 1.83 M cells after a cancel, this
 * one pass takes ~20 ms, and Python then only formats the matches (docs/decisions/0020).
 * Records come out employee by employee (a row's records of different rules interleaved by
 * day, each rule's in day order), then the cover rules day by day: a stable sort by rule
 * gives the evaluator's order. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
    gr_match *out;
    int64_t capacity;
    int64_t n;
} sink;

static void emit(sink *k, int32_t rule, int32_t e, int32_t day, int32_t length, int32_t shift,
                 int32_t other, int64_t hard, int64_t penalty, int64_t value)
{
    if (k->n < k->capacity) {
        gr_match *m = &k->out[k->n];
        m->rule = rule;
        m->employee = e;
        m->day = day;
        m->length = length;
        m->shift = shift;
        m->other = other;
        m->hard = hard;
        m->penalty = penalty;
        m->value = value;
    }
    k->n++; /* counted past the capacity too: the caller learns the size it needs */
}

/* A maximal run of worked (or free) days, [start, end), as the run rules see it. */
static void run_ended(const gr_problem *p, int32_t e, int work, int32_t start, int32_t end,
                      sink *k)
{
    int32_t len = end - start;
    int inner = start > 0 && end < p->n_days; /* runs touching either edge are exempt */
    if (work) {
        if (len > p->max_consec[e])
            emit(k, GR_RULE_MAX_CONSEC, e, start, len, -1, -1, 1, 0, len);
        if (len < p->min_consec[e] && inner)
            emit(k, GR_RULE_MIN_CONSEC, e, start, len, -1, -1, 1, 0, len);
    } else if (len < p->min_off[e] && inner) {
        emit(k, GR_RULE_MIN_OFF, e, start, len, -1, -1, 1, 0, len);
    }
}

/* One pass over the row for every rule that looks at single days or runs (records of
 * different rules interleave by day; within a rule they come in day order, which is all the
 * caller's stable sort by rule needs), then the rules on the row's totals. Returns GR_OK or
 * GR_ERR_ROSTER. */
static int employee(const gr_problem *p, const int32_t *row, int32_t e, int32_t *count,
                    uint8_t *worked, sink *k, int64_t *minutes_out, int32_t *shifts_out,
                    int32_t *cover)
{
    const int32_t D = p->n_days, S = p->n_shifts;
    const int64_t base = (int64_t)e * D;
    const uint8_t *day_off = p->day_off + base;
    const int32_t *pin = p->pin ? p->pin + base : NULL;
    const int32_t *on_ptr = p->on_ptr + base, *off_ptr = p->off_ptr + base;
    int64_t minutes = 0, weekends = 0;
    int32_t shifts = 0, run_start = 0;
    for (int32_t s = 0; s < S; s++)
        count[s] = 0;
    for (int32_t w = 0; w < p->n_weekends; w++)
        worked[w] = 0;
    for (int32_t d = 0; d < D; d++) {
        const int32_t v = row[d];
        if (v < -1 || v >= S)
            return GR_ERR_ROSTER;
        const int on = v >= 0;
        if (d > 0 && on != (row[d - 1] >= 0)) {
            run_ended(p, e, !on, run_start, d, k);
            run_start = d;
        }
        if (on) {
            if (d + 1 < D && row[d + 1] >= 0 && row[d + 1] < S &&
                p->forbidden[(int64_t)v * S + row[d + 1]])
                emit(k, GR_RULE_ROTATION, e, d, 2, row[d + 1], v, 1, 0, 0);
            count[v]++;
            minutes += p->length[v];
            shifts++;
            cover[(int64_t)d * S + v]++;
            const int32_t w = p->weekend[d];
            if (w >= 0 && !worked[w]) {
                worked[w] = 1;
                weekends++;
            }
            if (day_off[d])
                emit(k, GR_RULE_DAYS_OFF, e, d, 1, v, -1, 1, 0, 0);
        }
        if (pin && pin[d] != GR_FREE && v != pin[d])
            emit(k, GR_RULE_PINNED, e, d, 1, v, pin[d], 1, 0, 0);
        /* Weight-0 requests cost nothing and are not listed (as in the evaluator). */
        for (int32_t i = on_ptr[d]; i < on_ptr[d + 1]; i++)
            if (v != p->on_shift[i] && p->on_weight[i])
                emit(k, GR_RULE_SHIFT_ON, e, d, 1, p->on_shift[i], v, 0, p->on_weight[i], 0);
        for (int32_t i = off_ptr[d]; i < off_ptr[d + 1]; i++)
            if (v == p->off_shift[i] && p->off_weight[i])
                emit(k, GR_RULE_SHIFT_OFF, e, d, 1, p->off_shift[i], v, 0, p->off_weight[i],
                     0);
    }
    run_ended(p, e, row[D - 1] >= 0, run_start, D, k);
    minutes_out[e] = minutes;
    shifts_out[e] = shifts;
    for (int32_t s = 0; s < S; s++)
        if (count[s] > p->max_shifts[(int64_t)e * S + s])
            emit(k, GR_RULE_MAX_SHIFTS, e, -1, 0, s, -1, 1, 0, count[s]);
    if (minutes > p->max_minutes[e])
        emit(k, GR_RULE_MAX_MINUTES, e, -1, 0, -1, -1, 1, 0, minutes);
    if (minutes < p->min_minutes[e])
        emit(k, GR_RULE_MIN_MINUTES, e, -1, 0, -1, -1, 1, 0, minutes);
    if (weekends > p->max_weekends[e])
        emit(k, GR_RULE_MAX_WEEKENDS, e, -1, 0, -1, -1, 1, 0, weekends);
    return GR_OK;
}

int gr_explain(const gr_problem *p, const int32_t *roster, gr_match *out, int64_t capacity,
               int64_t *n_out, int64_t *minutes_out, int32_t *shifts_out, int32_t *cover_out)
{
    /* The problem is not validated again: a cancel's result waits on this call, and the
     * caller validated the problem once when it packed it (gr_validate's pass over the
     * cells' lists is half the cost of this one at 5,000 x 366). */
    int rc;
    if (!p || !roster || !n_out || !minutes_out || !shifts_out || !cover_out || (capacity && !out))
        return GR_ERR_NULL;
    if (capacity < 0)
        return GR_ERR_CONFIG;
    const int32_t E = p->n_employees, D = p->n_days, S = p->n_shifts;
    int32_t *count = malloc((size_t)S * sizeof *count);
    uint8_t *worked = malloc((size_t)p->n_weekends + 1);
    if (!count || !worked) {
        free(count);
        free(worked);
        return GR_ERR_NOMEM;
    }
    sink k = {out, capacity, 0};
    for (int64_t i = 0; i < (int64_t)D * S; i++)
        cover_out[i] = 0;
    for (int32_t e = 0; e < E; e++) {
        rc = employee(p, roster + (int64_t)e * D, e, count, worked, &k, minutes_out, shifts_out,
                      cover_out);
        if (rc != GR_OK) {
            free(count);
            free(worked);
            return rc;
        }
    }
    for (int32_t d = 0; d < D; d++)
        for (int32_t s = 0; s < S; s++) {
            int64_t c = (int64_t)d * S + s, req = p->cover_req[c], z = cover_out[c];
            if (req > z && p->cover_under[c])
                emit(&k, GR_RULE_COVER_UNDER, -1, d, 1, s, -1, 0, p->cover_under[c] * (req - z),
                     req - z);
            else if (z > req && p->cover_over[c])
                emit(&k, GR_RULE_COVER_OVER, -1, d, 1, s, -1, 0, p->cover_over[c] * (z - req),
                     z - req);
        }
    free(count);
    free(worked);
    *n_out = k.n;
    return GR_OK;
}

int64_t gr_render_rows(const int32_t *roster, int32_t n_rows, int32_t n_days, int32_t n_values,
                       const char *text, const int64_t *row_at, const int64_t *value_at,
                       char *out, int64_t capacity)
{
    if (!roster || !text || !row_at || !value_at || n_rows < 1 || n_days < 1 || n_values < 1 ||
        capacity < 0 || (capacity && !out))
        return GR_ERR_NULL;
    int64_t n = 0;
    /* Measured first, so nothing is written unless all of it fits. */
    int64_t need = 2 + (n_rows - 1);
    for (int32_t e = 0; e < n_rows; e++) {
        const int32_t *row = roster + (int64_t)e * n_days;
        need += row_at[e + 1] - row_at[e] + 2 + (n_days - 1);
        for (int32_t d = 0; d < n_days; d++) {
            int32_t v = row[d] + 1; /* -1, the day off, is the first value */
            if (v < 0 || v >= n_values)
                return GR_ERR_ROSTER;
            need += value_at[v + 1] - value_at[v];
        }
    }
    if (need > capacity)
        return need;
    out[n++] = '[';
    for (int32_t e = 0; e < n_rows; e++) {
        const int32_t *row = roster + (int64_t)e * n_days;
        if (e)
            out[n++] = ',';
        memcpy(out + n, text + row_at[e], (size_t)(row_at[e + 1] - row_at[e]));
        n += row_at[e + 1] - row_at[e];
        for (int32_t d = 0; d < n_days; d++) {
            int32_t v = row[d] + 1;
            if (d)
                out[n++] = ',';
            memcpy(out + n, text + value_at[v], (size_t)(value_at[v + 1] - value_at[v]));
            n += value_at[v + 1] - value_at[v];
        }
        out[n++] = ']';
        out[n++] = '}';
    }
    out[n++] = ']';
    return n;
}
