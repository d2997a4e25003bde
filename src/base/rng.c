#include "base/rng.h"

#include <math.h>

float rng_normal(rng *r) {
    float u1 = rng_f32(r), u2 = rng_f32(r);
    if (u1 < 1e-30f) u1 = 1e-30f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853071795864f * u2);
}
