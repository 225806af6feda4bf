/* xoshiro256** (Blackman & Vigna): fast, tiny state, good enough for search decisions. */
#include "internal.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void gr_rng_seed(gr_rng *r, uint64_t seed)
{
    /* splitmix spreads a small seed over the 256-bit state and never yields all zeros */
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t gr_rng_next(gr_rng *r)
{
    uint64_t *s = r->s;
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

int32_t gr_rng_below(gr_rng *r, int32_t n)
{
    /* Lemire's multiply-shift: the tiny bias for n << 2^32 does not matter for search */
    return (int32_t)(((gr_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

double gr_rng_unit(gr_rng *r) { return (double)(gr_rng_next(r) >> 11) * 0x1.0p-53; }
