/* ref_rope's conventions, pinned by identities rather than by another implementation of it:
 *  - NORM (adjacent pairs) on rows permuted the way llama.cpp's converter permutes llama's q/k equals
 *    NEOX (rotate-half) on the unpermuted rows, permuted the same way;
 *  - per-pair factors all equal to f equal linear scaling freq_scale = 1/f;
 *  - position 0 is the identity, rotation preserves each pair's norm, dims past n_rot pass through;
 *  - pair 0 (frequency 1) at position p is a rotation by exactly p radians.
 * And the small elementwise ops (ref_add_bias, ref_geglu, ref_scale) on hand-computed values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "check.h"
#include "engine/ops_ref.h"

enum { T = 5, H = 3, D = 24, NROT = 16 };

static float max_abs(const float *a, const float *b, int n) {
    float m = 0;
    for (int i = 0; i < n; i++) m = fmaxf(m, fabsf(a[i] - b[i]));
    return m;
}

/* converter order: head row j of the NORM layout holds HF row (j % 2) * n/2 + j / 2 (first n_rot dims) */
static void permute_norm(const float *x, float *y, int rows) {
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * D;
        float *yr = y + (int64_t)r * D;
        for (int j = 0; j < NROT; j++) yr[j] = xr[(j % 2) * (NROT / 2) + j / 2];
        for (int j = NROT; j < D; j++) yr[j] = xr[j];
    }
}

int main(void) {
    rng r;
    rng_seed(&r, 170);
    int n = T * H * D;
    float x[T * H * D], a[T * H * D], b[T * H * D], c[T * H * D];
    int32_t pos[T] = {0, 1, 7, 33, 95};
    for (int i = 0; i < n; i++) x[i] = rng_normal(&r);

    /* NORM on permuted rows == permuted NEOX */
    rope_params neox = {ROPE_NEOX, NROT, 10000.0f, 1.0f}, norm = {ROPE_NORM, NROT, 10000.0f, 1.0f};
    memcpy(a, x, sizeof x);
    ref_rope(a, pos, T, H, D, &neox, NULL);
    permute_norm(a, b, T * H);
    permute_norm(x, c, T * H);
    ref_rope(c, pos, T, H, D, &norm, NULL);
    float e = max_abs(b, c, n);
    CHECKF(e < 1e-6f, "NORM(permuted x) vs permuted NEOX(x): %g", e);

    /* factors all f == freq_scale 1/f */
    float factors[NROT / 2];
    for (int i = 0; i < NROT / 2; i++) factors[i] = 4.0f;
    rope_params scaled = {ROPE_NEOX, NROT, 10000.0f, 0.25f};
    memcpy(a, x, sizeof x);
    memcpy(b, x, sizeof x);
    ref_rope(a, pos, T, H, D, &neox, factors);
    ref_rope(b, pos, T, H, D, &scaled, NULL);
    e = max_abs(a, b, n);
    CHECKF(e < 1e-6f, "factors 4 vs freq_scale 1/4: %g", e);

    /* identity at position 0, norms kept, pass-through dims, pair 0 rotated by p radians */
    memcpy(a, x, sizeof x);
    ref_rope(a, pos, T, H, D, &neox, NULL);
    CHECK(max_abs(a, x, H * D) == 0.0f);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            const float *xo = x + (t * H + h) * D, *xr = a + (t * H + h) * D;
            for (int i = 0; i < NROT / 2; i++) {
                float n0 = hypotf(xo[i], xo[i + NROT / 2]), n1 = hypotf(xr[i], xr[i + NROT / 2]);
                CHECKF(fabsf(n0 - n1) < 1e-5f * (1 + n0), "pair %d norm %g -> %g", i, n0, n1);
            }
            for (int j = NROT; j < D; j++) CHECK(xr[j] == xo[j]);
            float want0 = xo[0] * cosf((float)pos[t]) - xo[NROT / 2] * sinf((float)pos[t]);
            CHECKF(fabsf(xr[0] - want0) < 1e-5f, "pair 0 at position %d: %g, expected %g", pos[t], xr[0], want0);
        }

    /* elementwise ops */
    float y[6] = {1, 2, 3, 4, 5, 6}, bias[3] = {0.5f, -1, 2};
    ref_add_bias(y, bias, 2, 3);
    float want[6] = {1.5f, 1, 5, 4.5f, 4, 8};
    CHECK(max_abs(y, want, 6) == 0.0f);
    ref_scale(y, 2.0f, 6);
    CHECK(y[5] == 16.0f && y[0] == 3.0f);
    float g[4] = {-3, -0.5f, 0, 2}, u[4] = {1, 2, 3, -1}, o[4];
    ref_geglu(g, u, o, 4);
    /* gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): -0.0036374, -0.1542860, 0, 1.9545977 */
    float wg[4] = {-0.0036374f * 1, -0.1542860f * 2, 0, 1.9545977f * -1};
    e = max_abs(o, wg, 4);
    CHECKF(e < 1e-6f, "geglu: %g", e);
    return check_report("test_rope");
}
