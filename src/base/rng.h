/* rng: a small deterministic PRNG (splitmix64 seeding a xoshiro256**) for tests, synth and sampling.
 * Same seed, same stream, on every machine. */
#ifndef LLM170_BASE_RNG_H
#define LLM170_BASE_RNG_H

#include <stdint.h>

typedef struct rng { uint64_t s[4]; } rng;

static inline uint64_t rng_splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline void rng_seed(rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = rng_splitmix64(&seed);
}

static inline uint64_t rng_u64(rng *r) {
    uint64_t *s = r->s;
    uint64_t t = s[1] << 17, x = s[1] * 5;
    uint64_t result = ((x << 7) | (x >> 57)) * 9;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return result;
}

/* uniform in [0, 1) with 24 bits */
static inline float rng_f32(rng *r) { return (float)(rng_u64(r) >> 40) * 0x1p-24f; }

/* uniform in [lo, hi) */
static inline float rng_uniform(rng *r, float lo, float hi) { return lo + (hi - lo) * rng_f32(r); }

/* standard normal (Box-Muller; one value per call, the other discarded for simplicity) */
float rng_normal(rng *r);

#endif
