/* Exact scoring: one small function per rule, written for obviousness rather than speed. This
 * is what gr_score reports and what the Python evaluator must agree with; the search itself
 * uses the incremental magnitudes in delta.c. */
#include <stdlib.h>

#include "internal.h"

static const int32_t *row_of(const gr_problem *p, const int32_t *r, int32_t e)
{
    return r + (int64_t)e * p->n_days;
}

static int64_t rule_shift_rotation(const gr_problem *p, const int32_t *row)
{
    int64_t n = 0;
    for (int32_t d = 0; d + 1 < p->n_days; d++)
        if (row[d] >= 0 && row[d + 1] >= 0 &&
            p->forbidden[(int64_t)row[d] * p->n_shifts + row[d + 1]])
            n++;
    return n;
}

/* `count` is caller-provided scratch of n_shifts counters */
static int64_t rule_max_shifts(const gr_problem *p, const int32_t *row, int32_t e,
                               int32_t *count)
{
    int64_t n = 0;
    for (int32_t s = 0; s < p->n_shifts; s++)
        count[s] = 0;
    for (int32_t d = 0; d < p->n_days; d++)
        if (row[d] >= 0)
            count[row[d]]++;
    for (int32_t s = 0; s < p->n_shifts; s++)
        n += count[s] > p->max_shifts[(int64_t)e * p->n_shifts + s];
    return n;
}

static int64_t total_minutes(const gr_problem *p, const int32_t *row)
{
    int64_t m = 0;
    for (int32_t d = 0; d < p->n_days; d++)
        if (row[d] >= 0)
            m += p->length[row[d]];
    return m;
}

static int64_t rule_max_minutes(const gr_problem *p, const int32_t *row, int32_t e)
{
    return total_minutes(p, row) > p->max_minutes[e];
}

static int64_t rule_min_minutes(const gr_problem *p, const int32_t *row, int32_t e)
{
    return total_minutes(p, row) < p->min_minutes[e];
}

/* Calls visit(start, length) for each maximal run of days whose working status is `work`. */
typedef int64_t (*run_rule)(const gr_problem *p, int32_t e, int32_t start, int32_t len);

static int64_t for_runs(const gr_problem *p, const int32_t *row, int32_t e, int work, run_rule f)
{
    int64_t n = 0;
    int32_t d = 0;
    while (d < p->n_days) {
        if ((row[d] >= 0) != work) {
            d++;
            continue;
        }
        int32_t start = d;
        while (d < p->n_days && (row[d] >= 0) == work)
            d++;
        n += f(p, e, start, d - start);
    }
    return n;
}

static int touches_edge(const gr_problem *p, int32_t start, int32_t len)
{
    return start == 0 || start + len == p->n_days;
}

static int64_t too_long(const gr_problem *p, int32_t e, int32_t start, int32_t len)
{
    (void)start;
    return len > p->max_consec[e];
}

static int64_t work_too_short(const gr_problem *p, int32_t e, int32_t start, int32_t len)
{
    return len < p->min_consec[e] && !touches_edge(p, start, len);
}

static int64_t off_too_short(const gr_problem *p, int32_t e, int32_t start, int32_t len)
{
    return len < p->min_off[e] && !touches_edge(p, start, len);
}

/* `worked` is caller-provided scratch of n_weekends bytes */
static int64_t rule_max_weekends(const gr_problem *p, const int32_t *row, int32_t e,
                                 uint8_t *worked)
{
    int64_t n = 0;
    for (int32_t w = 0; w < p->n_weekends; w++)
        worked[w] = 0;
    for (int32_t d = 0; d < p->n_days; d++)
        if (p->weekend[d] >= 0 && row[d] >= 0)
            worked[p->weekend[d]] = 1;
    for (int32_t w = 0; w < p->n_weekends; w++)
        n += worked[w];
    return n > p->max_weekends[e];
}

static int64_t rule_days_off(const gr_problem *p, const int32_t *row, int32_t e)
{
    int64_t n = 0;
    for (int32_t d = 0; d < p->n_days; d++)
        n += row[d] >= 0 && p->day_off[(int64_t)e * p->n_days + d];
    return n;
}

static int64_t rule_pinned(const gr_problem *p, const int32_t *row, int32_t e)
{
    if (!p->pin)
        return 0;
    const int32_t *pin = p->pin + (int64_t)e * p->n_days;
    int64_t n = 0;
    for (int32_t d = 0; d < p->n_days; d++)
        n += pin[d] != GR_FREE && row[d] != pin[d];
    return n;
}

static int64_t soft_requests(const gr_problem *p, const int32_t *row, int32_t e)
{
    int64_t pen = 0;
    for (int32_t d = 0; d < p->n_days; d++) {
        int64_t c = (int64_t)e * p->n_days + d;
        for (int32_t i = p->on_ptr[c]; i < p->on_ptr[c + 1]; i++)
            pen += row[d] != p->on_shift[i] ? p->on_weight[i] : 0;
        for (int32_t i = p->off_ptr[c]; i < p->off_ptr[c + 1]; i++)
            pen += row[d] == p->off_shift[i] ? p->off_weight[i] : 0;
    }
    return pen;
}

/* `z` is caller-provided zeroed scratch of D*S counters */
static int64_t soft_cover(const gr_problem *p, const int32_t *roster, int32_t *z)
{
    int64_t cells = (int64_t)p->n_days * p->n_shifts, pen = 0;
    for (int32_t e = 0; e < p->n_employees; e++)
        for (int32_t d = 0; d < p->n_days; d++) {
            int32_t s = roster[(int64_t)e * p->n_days + d];
            if (s >= 0)
                z[(int64_t)d * p->n_shifts + s]++;
        }
    for (int64_t k = 0; k < cells; k++) {
        int64_t req = p->cover_req[k];
        pen += req > z[k] ? p->cover_under[k] * (req - z[k]) : p->cover_over[k] * (z[k] - req);
    }
    return pen;
}

int gr_score_unchecked(const gr_problem *p, const int32_t *roster, int64_t *hard, int64_t *pen)
{
    int64_t h = 0, s = 0;
    uint8_t *worked = malloc((size_t)p->n_weekends + 1);
    int32_t *z = calloc((size_t)p->n_days * (size_t)p->n_shifts, sizeof *z);
    int32_t *count = malloc((size_t)p->n_shifts * sizeof *count);
    if (!worked || !z || !count) {
        free(worked);
        free(z);
        free(count);
        return GR_ERR_NOMEM;
    }
    for (int32_t e = 0; e < p->n_employees; e++) {
        const int32_t *row = row_of(p, roster, e);
        h += rule_shift_rotation(p, row);
        h += rule_max_shifts(p, row, e, count);
        h += rule_max_minutes(p, row, e);
        h += rule_min_minutes(p, row, e);
        h += for_runs(p, row, e, 1, too_long);
        h += for_runs(p, row, e, 1, work_too_short);
        h += for_runs(p, row, e, 0, off_too_short);
        h += rule_max_weekends(p, row, e, worked);
        h += rule_days_off(p, row, e);
        h += rule_pinned(p, row, e);
        s += soft_requests(p, row, e);
    }
    s += soft_cover(p, roster, z);
    free(worked);
    free(z);
    free(count);
    *hard = h;
    *pen = s;
    return GR_OK;
}

int gr_score(const gr_problem *p, const int32_t *roster, int64_t *hard_out, int64_t *penalty_out)
{
    int rc = gr_validate(p);
    if (rc != GR_OK)
        return rc;
    if (!roster || !hard_out || !penalty_out)
        return GR_ERR_NULL;
    int64_t cells = (int64_t)p->n_employees * p->n_days;
    for (int64_t i = 0; i < cells; i++)
        if (roster[i] < -1 || roster[i] >= p->n_shifts)
            return GR_ERR_ROSTER;
    return gr_score_unchecked(p, roster, hard_out, penalty_out);
}
