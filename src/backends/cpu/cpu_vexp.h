/* cpu_vexp: e^x on 8 float lanes for the CPU backend's vectorized kernels (internal to src/backends/cpu/).
 * Included by the files whose hot loops use it (cpu_elementwise.c, cpu_gdn.c); compiled inside their
 * target-clone functions, so each clone gets its ISA's instructions. */
#ifndef LLM170_ENGINE_CPU_VEXP_H
#define LLM170_ENGINE_CPU_VEXP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* e^x on 8 lanes with GCC vector extensions (the scalar formula with a bit-cast does not vectorize):
 * n = round(x log2 e), r = x - n ln2 (ln2 split in two so the product is exact), e^r by its degree-6
 * series, times 2^n built in the exponent bits. x is clamped to [-87.3, 88.7] (e^x stays finite and
 * normal). */
/* vexp8 is static and always inlined, so the ABI note gcc gives for 32-byte vector returns in the
 * baseline clone does not apply */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v8sf __attribute__((vector_size(32)));
typedef int32_t v8si __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) v8sf vexp8(v8sf x) {
    const v8sf lo = {-87.3f, -87.3f, -87.3f, -87.3f, -87.3f, -87.3f, -87.3f, -87.3f};
    const v8sf hi = {88.7f, 88.7f, 88.7f, 88.7f, 88.7f, 88.7f, 88.7f, 88.7f};
    v8si mlo = x < lo, mhi = x > hi;
    x = (v8sf)(((v8si)x & ~mlo) | ((v8si)lo & mlo));
    x = (v8sf)(((v8si)x & ~mhi) | ((v8si)hi & mhi));
    v8sf t = x * 1.44269504089f + 0.5f;
    v8si n = __builtin_convertvector(t, v8si); /* truncates toward zero: fix up to floor below */
    v8sf nf = __builtin_convertvector(n, v8sf);
    v8si fix = nf > t;
    n = n + fix; /* fix is -1 where truncation went up */
    nf = __builtin_convertvector(n, v8sf);
    v8sf r = x - nf * 0.693359375f + nf * 2.12194440e-4f;
    v8sf p = 1.0f + r * (1.0f + r * (0.5f + r * (0.166666671f + r * (0.0416666418f + r * (0.00833336823f + r * 0.00138873036f)))));
    return p * (v8sf)((n + 127) << 23);
}

/* s[j] = e^(s[j] - mx) for j < n, in place, and their sum (8 lanes at a time in lane order, the tail by expf):
 * a softmax row's numerators */
static inline __attribute__((always_inline)) float vexp_shift_sum(float *s, int n, float mx) {
    float sum = 0.0f;
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        v8sf x;
        memcpy(&x, s + j, sizeof x);
        x = vexp8(x - mx);
        memcpy(s + j, &x, sizeof x);
        for (int e = 0; e < 8; e++) sum += x[e];
    }
    for (; j < n; j++) sum += s[j] = expf(s[j] - mx);
    return sum;
}

#endif
