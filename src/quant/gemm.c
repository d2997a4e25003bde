/* gemm: panels, activations and the plain-C reference of the int8 matrix products (see gemm.h). */
#include "quant/gemm.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "base/fp16.h"
#include "quant/blocks.h"

#if LLM170_HAVE_X86_SIMD
void gemm_run_avx512(const gemm_panel *p, const gemm_acts *x, int t0, int t1, const int32_t *rows, float *y,
                     int64_t ldy);
void gemm_interleave_avx512(const uint8_t *src, int64_t K, uint8_t *dst);
void gemm_run_avx2(const gemm_panel *p, const gemm_acts *x, int t0, int t1, const int32_t *rows, float *y,
                   int64_t ldy);
bool gemm_avx2_supports(int off, int umax, bool has_min);
void gemm_interleave_avx2(const uint8_t *src, int64_t K, uint8_t *dst);
#endif

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* step s (4 bytes) of row r of src [GEMM_PANEL][K] to dst + 4 * (GEMM_PANEL * s + r) */
static void interleave_ref(const uint8_t *src, int64_t K, uint8_t *dst) {
    for (int64_t s = 0; s < K / 4; s++)
        for (int r = 0; r < GEMM_PANEL; r++) memcpy(dst + 4 * (GEMM_PANEL * s + r), src + (size_t)r * K + 4 * s, 4);
}

/* the panel interleave for this CPU, chosen once (every gemm_pack asks for it) */
static void (*best_interleave)(const uint8_t *src, int64_t K, uint8_t *dst) = interleave_ref;
static pthread_once_t best_once = PTHREAD_ONCE_INIT;

static void pick_best(void) {
#if LLM170_HAVE_X86_SIMD
    if (quant_isa_available(QUANT_ISA_AVX512)) best_interleave = gemm_interleave_avx512;
    else if (quant_isa_available(QUANT_ISA_AVX2)) best_interleave = gemm_interleave_avx2;
#endif
}

gemm_run_fn gemm_run_isa(enum quant_isa isa, enum qtype t) {
    const quant_ops *s = quant_ops_get(t, QUANT_ISA_SCALAR);
    if (!s || !s->u8.to_u8 || !quant_isa_available(isa)) return NULL;
    if (s->vec_dot_type != QT_Q8_0 && s->vec_dot_type != QT_Q8_1 && s->vec_dot_type != QT_Q8_K) return NULL;
#if LLM170_HAVE_X86_SIMD
    if (isa == QUANT_ISA_AVX512) return gemm_run_avx512;
    if (isa == QUANT_ISA_AVX2) return gemm_avx2_supports(s->u8.off, s->u8.umax, s->u8.has_min) ? gemm_run_avx2 : NULL;
#endif
    return NULL;
}

gemm_run_fn gemm_run_best(enum qtype t) {
    const gemm_run_fn f = gemm_run_isa(QUANT_ISA_AVX512, t);
    return f ? f : gemm_run_isa(QUANT_ISA_AVX2, t);
}

bool gemm_supported(enum qtype t) { return gemm_run_best(t) != NULL; }

size_t gemm_panel_bytes(int64_t K, int sb) {
    return align64((size_t)K * GEMM_PANEL) + 2 * align64(sizeof(float) * (size_t)(K / sb) * GEMM_PANEL);
}

/* the next n bytes of a buffer being laid out, rounded up to 64 */
static void *carve(char **b, size_t n) {
    void *p = *b;
    *b += align64(n);
    return p;
}

void gemm_panel_init(gemm_panel *p, void *buf, int64_t K, int sb, bool has_min) {
    char *b = buf;
    p->K = K;
    p->sb = sb;
    p->nrows = 0;
    p->has_min = has_min;
    p->u = carve(&b, (size_t)K * GEMM_PANEL);
    p->S = carve(&b, sizeof(float) * (size_t)(K / sb) * GEMM_PANEL);
    p->M = carve(&b, sizeof(float) * (size_t)(K / sb) * GEMM_PANEL);
}

void gemm_pack(const quant_ops *ops, const void *rows, size_t row_bytes, int nrows, gemm_panel *p, void *tmp) {
    const int64_t K = p->K, nsb = K / p->sb;
    uint8_t *u = tmp;                                          /* [GEMM_PANEL][K] */
    float *S = (void *)((char *)tmp + (size_t)GEMM_PANEL * K); /* [GEMM_PANEL][nsb] */
    float *M = S + (size_t)GEMM_PANEL * nsb;
    p->nrows = nrows;
    p->off = ops->u8.off;
    p->umax = ops->u8.umax;
    for (int r = 0; r < nrows; r++)
        ops->u8.to_u8((const char *)rows + (size_t)r * row_bytes, u + (size_t)r * K, S + r * nsb, M + r * nsb, K);
    /* rows past nrows are zero (their results are never stored) */
    memset(u + (size_t)nrows * K, 0, (size_t)(GEMM_PANEL - nrows) * (size_t)K);
    pthread_once(&best_once, pick_best);
    best_interleave(u, K, p->u);
    for (int64_t j = 0; j < nsb; j++)
        for (int r = 0; r < GEMM_PANEL; r++) {
            p->S[j * GEMM_PANEL + r] = r < nrows ? S[r * nsb + j] : 0.0f;
            p->M[j * GEMM_PANEL + r] = r < nrows && p->has_min ? M[r * nsb + j] : 0.0f;
        }
}

size_t gemm_pack_scratch_bytes(int64_t K, int sb) {
    return (size_t)GEMM_PANEL * (size_t)K + 2 * sizeof(float) * GEMM_PANEL * (size_t)(K / sb);
}

int gemm_act_group(enum qtype act, int sb) { return (act == QT_Q8_K ? QK_K : QK8_0) / sb; }

size_t gemm_acts_bytes(int64_t K, int sb, int ag, int T) {
    const size_t nsb = (size_t)(K / sb), nag = nsb / (size_t)ag;
    return align64((size_t)T * (size_t)K) + align64((size_t)T * nsb * 4) * 2 + align64((size_t)T * nag * 4);
}

void gemm_acts_layout(gemm_acts *a, void *buf, enum qtype act, int64_t K, int sb, int T) {
    const int ag = gemm_act_group(act, sb);
    const size_t nsb = (size_t)(K / sb);
    char *b = buf;
    *a = (gemm_acts){.K = K, .sb = sb, .ag = ag};
    a->q = carve(&b, (size_t)T * (size_t)K);
    a->xo = carve(&b, (size_t)T * nsb * 4);
    a->xm = carve(&b, (size_t)T * nsb * 4);
    a->a = carve(&b, (size_t)T * nsb / (size_t)ag * 4);
}

void gemm_acts_fill_rows(gemm_acts *a, enum qtype act, const void *xq, size_t xrow, const int32_t *rows, int i0,
                         int i1, int off) {
    const int64_t K = a->K, sb = a->sb, ag = a->ag, nsb = K / sb, nag = nsb / ag;
    for (int i = i0; i < i1; i++) {
        const char *row = (const char *)xq + (size_t)rows[i] * xrow;
        int8_t *q = (int8_t *)a->q + (size_t)i * K;
        int32_t *xo = (int32_t *)a->xo + (size_t)i * nsb;
        float *xm = (float *)a->xm + (size_t)i * nsb, *sa = (float *)a->a + (size_t)i * nag;
        for (int64_t g = 0; g < nag; g++) {
            const int8_t *src;
            if (act == QT_Q8_K) {
                const block_q8_K *blk = (const block_q8_K *)row + g;
                src = blk->qs;
                sa[g] = blk->d;
            } else if (act == QT_Q8_1) {
                const block_q8_1 *blk = (const block_q8_1 *)row + g;
                src = blk->qs;
                sa[g] = fp16_to_f32(blk->d);
            } else {
                const block_q8_0 *blk = (const block_q8_0 *)row + g;
                src = blk->qs;
                sa[g] = fp16_to_f32(blk->d);
            }
            memcpy(q + g * ag * sb, src, (size_t)(ag * sb));
        }
        for (int64_t j = 0; j < nsb; j++) {
            int32_t sum = 0;
            for (int64_t k = 0; k < sb; k++) sum += q[j * sb + k];
            xo[j] = -off * sum;
            xm[j] = (float)sum * sa[j / ag];
        }
    }
}

void gemm_run_ref(const gemm_panel *p, const gemm_acts *x, int t0, int t1, const int32_t *rows, float *y,
                  int64_t ldy) {
    const int64_t K = p->K, nsb = K / p->sb, nag = nsb / x->ag;
    for (int t = t0; t < t1; t++) {
        const int8_t *q = x->q + (size_t)t * K;
        const int32_t *xo = x->xo + (size_t)t * nsb;
        const float *xm = x->xm + (size_t)t * nsb, *a = x->a + (size_t)t * nag;
        for (int r = 0; r < p->nrows; r++) {
            float acc = 0.0f;
            for (int64_t g = 0; g < nag; g++) {
                float blk = 0.0f;
                for (int64_t j = g * x->ag; j < (g + 1) * x->ag; j++) {
                    int32_t i = xo[j];
                    for (int64_t k = j * p->sb; k < (j + 1) * p->sb; k++)
                        i += p->u[(k / 4) * GEMM_PANEL * 4 + 4 * r + k % 4] * q[k];
                    blk = fmaf((float)i, p->S[j * GEMM_PANEL + r], blk);
                }
                acc = fmaf(blk, a[g], acc);
            }
            if (p->has_min)
                for (int64_t j = 0; j < nsb; j++) acc = fmaf(-p->M[j * GEMM_PANEL + r], xm[j], acc);
            y[(int64_t)rows[t] * ldy + r] = acc;
        }
    }
}
