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

