/* mmq_ref: the host model of kernels/mmq.cu, and the host q8_1 quantizer (mmq_ref.h). */
#include "backends/cuda/mmq_ref.h"

#include <math.h>
#include <string.h>

#include "backends/cuda/kernels/mmq_unit.h"

float mmq_ref_dot(enum qtype t, const uint8_t *qs, const uint8_t *hi, const uint8_t *meta, int64_t r, int64_t K,
                  const int8_t *xq, const float *ds, const float *x, const float *wf, mmq_ref_cmp *cmp) {
    const int64_t U = K / 32, G = gemv_meta_group(t) / 32; /* units a meta group */
    const int qsb = gemv_qs_bytes(t), hib = gemv_hi_bytes(t), mb = gemv_meta_bytes(t);
    double ref = 0, ref_q = 0, sq = 0, sm = 0, sw = 0;
    float acc = 0.0f;
    for (int64_t u = 0; u < U; u++) {
        uint32_t q[8], h[2] = {0, 0}, v[8];
        memcpy(q, qs + (size_t)(r * U + u) * (size_t)qsb, (size_t)qsb);
        if (hib) memcpy(h, hi + (size_t)(r * U + u) * (size_t)hib, (size_t)hib);
        gemv_unpack_unit(t, q, h, v);
        float p0, p1, a6;
        mmq_unit_scale(t, meta + (size_t)(r * (U / G) + u / G) * (size_t)mb, (int)(u % G), &p0, &p1, &a6);
        const int8_t *xu = xq + u * 32;
        const float d = ds[2 * u], S = ds[2 * u + 1];
        int32_t lo = 0, hi16 = 0;
        for (int i = 0; i < 32; i++) {
            const int qi = (int8_t)(v[i / 4] >> (8 * (i % 4)));
            if (t == QT_Q6_K && i >= 16) hi16 += qi * xu[i];
            else lo += qi * xu[i];
            /* the bound's terms: w' = a q + b (Q6_K: a sc_h q) exactly, m = |a q| + |b| */
            const double a = t == QT_Q6_K ? (double)a6 * (i < 16 ? p0 : p1) : (double)p0;
            const double b = t == QT_Q6_K ? 0.0 : (double)p1, wq = a * qi + b, m = fabs(a * qi) + fabs(b);
            ref_q += wq * d * xu[i];
            sm += m * d * fabs((double)xu[i]);
            sq += fabs(wq) * d;
            if (x && wf) {
                ref += (double)wf[u * 32 + i] * x[u * 32 + i];
                sw += fabs(wq * x[u * 32 + i]);
            }
        }
        acc = mmq_unit_acc(t, acc, (float)lo, (float)hi16, d, S, p0, p1, a6);
    }
    if (cmp && x && wf) {
        cmp->ref = ref;
        cmp->ref_q = ref_q;
        cmp->bound_q = (double)(2 * U + 3) * 0x1p-24 * sm;
        cmp->bound = (0.5 + 0x1p-15) * sq + cmp->bound_q + 0x1p-24 * sw + 1e-30;
        cmp->bound_q += 1e-30;
    }
    return acc;
}

void check_ref_q8_1(const float *x, int8_t *xq, float *ds, int64_t K) {
    for (int64_t u = 0; u < K / 32; u++) {
        const float *xu = x + u * 32;
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) amax = fabsf(xu[i]) > amax ? fabsf(xu[i]) : amax;
        const float d = amax / 127.0f, id = amax != 0.0f ? 1.0f / d : 0.0f;
        int s = 0;
        for (int i = 0; i < 32; i++) {
            xq[u * 32 + i] = (int8_t)(int)roundf(xu[i] * id);
            s += xq[u * 32 + i];
        }
        ds[2 * u] = d;
        ds[2 * u + 1] = d * (float)s;
    }
}
