/* Bounds checks: the solver indexes every array without further checks, so a malformed
 * problem must be rejected here, before any search code sees it. */
#include "internal.h"

static int ptr_ok(const int32_t *ptr, int64_t cells, int32_t n)
{
    if (ptr[0] != 0 || ptr[cells] != n)
        return 0;
    for (int64_t i = 0; i < cells; i++)
        if (ptr[i + 1] < ptr[i])
            return 0;
    return 1;
}

static int all_in(const int32_t *a, int64_t n, int32_t lo, int32_t hi_excl)
{
    for (int64_t i = 0; i < n; i++)
        if (a[i] < lo || a[i] >= hi_excl)
            return 0;
    return 1;
}

static int all_nonneg(const int32_t *a, int64_t n) { return all_in(a, n, 0, INT32_MAX); }

/* Weights and requirements bounded so that every penalty sum fits int64 with room to spare. */
#define GR_MAX_WEIGHT (1 << 20)

static int all_bits(const uint8_t *a, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (a[i] > 1)
            return 0;
    return 1;
}

int gr_validate(const gr_problem *p)
{
    if (!p)
        return GR_ERR_NULL;
    if (!p->length || !p->forbidden || !p->max_shifts || !p->min_minutes || !p->max_minutes ||
        !p->max_consec || !p->min_consec || !p->min_off || !p->max_weekends || !p->day_off ||
        !p->weekend || !p->on_ptr || !p->off_ptr || !p->cover_req || !p->cover_under ||
        !p->cover_over)
        return GR_ERR_NULL;
    if (p->n_employees < 1 || p->n_days < 1 || p->n_shifts < 1 || p->n_weekends < 0 ||
        p->n_on < 0 || p->n_off < 0)
        return GR_ERR_SIZES;
    if ((p->n_on > 0 && (!p->on_shift || !p->on_weight)) ||
        (p->n_off > 0 && (!p->off_shift || !p->off_weight)))
        return GR_ERR_NULL;
    const int64_t E = p->n_employees, D = p->n_days, S = p->n_shifts;
    /* cells and minute totals are kept in int32: keep every product far from overflow */
    if (E * D > (1 << 24) || S > 1024 || D > 100000 || E * S > (1 << 24) || D * S > (1 << 20) ||
        p->n_weekends > D)
        return GR_ERR_TOO_LARGE;
    if (!all_in(p->length, S, 1, 1441))
        return GR_ERR_LENGTH;
    if (!all_bits(p->forbidden, S * S))
        return GR_ERR_FORBIDDEN;
    if (!all_nonneg(p->max_shifts, E * S))
        return GR_ERR_MAX_SHIFTS;
    if (!all_nonneg(p->min_minutes, E) || !all_nonneg(p->max_minutes, E))
        return GR_ERR_MINUTES;
    if (!all_nonneg(p->max_consec, E) || !all_nonneg(p->min_consec, E) ||
        !all_nonneg(p->min_off, E))
        return GR_ERR_CONSEC;
    if (!all_nonneg(p->max_weekends, E))
        return GR_ERR_WEEKENDS;
    if (!all_bits(p->day_off, E * D))
        return GR_ERR_DAY_OFF;
    if (!all_in(p->weekend, D, -1, p->n_weekends))
        return GR_ERR_WEEKEND;
    if (!ptr_ok(p->on_ptr, E * D, p->n_on))
        return GR_ERR_ON_PTR;
    if (!all_in(p->on_shift, p->n_on, 0, (int32_t)S))
        return GR_ERR_ON_SHIFT;
    if (!ptr_ok(p->off_ptr, E * D, p->n_off))
        return GR_ERR_OFF_PTR;
    if (!all_in(p->off_shift, p->n_off, 0, (int32_t)S))
        return GR_ERR_OFF_SHIFT;
    if (!all_in(p->on_weight, p->n_on, 0, GR_MAX_WEIGHT + 1) ||
        !all_in(p->off_weight, p->n_off, 0, GR_MAX_WEIGHT + 1) ||
        !all_in(p->cover_under, D * S, 0, GR_MAX_WEIGHT + 1) ||
        !all_in(p->cover_over, D * S, 0, GR_MAX_WEIGHT + 1))
        return GR_ERR_WEIGHT;
    if (!all_in(p->cover_req, D * S, 0, GR_MAX_WEIGHT + 1))
        return GR_ERR_COVER;
    if (p->pin && !all_in(p->pin, E * D, GR_FREE, (int32_t)S))
        return GR_ERR_PIN;
    return GR_OK;
}
