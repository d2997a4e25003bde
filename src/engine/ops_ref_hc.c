/* ops_ref_hc: the naive references of the qwen4exp ops (ops_ref.h): hyper-connections, the PLE n-gram
 * embedding's hash, gate and dilated conv, and QSA's block keys, block selection and sparse attention.
 * Plain float loops; the math is /work/shared/specs/qwen4exp.md (sections 2.3, 2.5, 2.7). */
#include <math.h>
#include <string.h>

#include "engine/ops_ref.h"

static float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

void ref_rms_norm_groups(const float *x, const float *w, float *y, int T, int G, int D, float eps) {
    for (int64_t r = 0; r < (int64_t)T * G; r++) {
        const float *xr = x + r * D;
        float *yr = y + r * D;
        const float *wr = w ? w + (r % G) * D : NULL;
        float ss = 0;
        for (int i = 0; i < D; i++) ss += xr[i] * xr[i];
        const float inv = 1.0f / sqrtf(ss / (float)D + eps);
        for (int i = 0; i < D; i++) yr[i] = xr[i] * inv * (wr ? wr[i] : 1.0f);
    }
}

void ref_silu_scaled(const float *x, float *y, float s, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const float v = s * x[i];
        y[i] = v * sigmoidf(v);
    }
}

void ref_hc_mix(const float *xn, const float *gate, float *m, int T, int S, int D) {
    for (int t = 0; t < T; t++)
        for (int d = 0; d < D; d++) {
            float acc = 0;
            for (int s = 0; s < S; s++) {
                const int64_t i = ((int64_t)t * S + s) * D + d;
                acc += sigmoidf(gate[i]) * xn[i];
            }
            m[(int64_t)t * D + d] = acc / (float)S;
        }
}

void ref_hc_add(float *X, const float *y, const float *inj, int T, int S, int D) {
    for (int t = 0; t < T; t++)
        for (int s = 0; s < S; s++) {
            const float a = 2.0f * sigmoidf(inj[(int64_t)t * S + s] / (float)S);
            float *xr = X + ((int64_t)t * S + s) * D;
            for (int d = 0; d < D; d++) xr[d] += a * y[(int64_t)t * D + d];
        }
}

void ref_ple_gate(const float *key, const float *query, const float *v, float *out, int T, int S, int D) {
    for (int t = 0; t < T; t++)
        for (int s = 0; s < S; s++) {
            const int64_t o = ((int64_t)t * S + s) * D;
            float z = 0;
            for (int d = 0; d < D; d++) z += key[o + d] * query[o + d];
            z /= sqrtf((float)D);
            /* the clamp comes before the sqrt: tiny scores become +-1e-3, an exact 0 stays 0 */
            const float a = fabsf(z) > 1e-6f ? fabsf(z) : 1e-6f;
            const float g = (z > 0 ? 1.0f : z < 0 ? -1.0f : 0.0f) * sqrtf(a);
            const float gam = sigmoidf(g);
            for (int d = 0; d < D; d++) out[o + d] = gam * v[(int64_t)t * D + d];
        }
}

void ref_conv1d_dilated_silu(const float *x, float *state, const float *w, float *y, int T, int Ch, int K, int dil) {
    const int H = (K - 1) * dil; /* history rows */
    for (int t = 0; t < T; t++)
        for (int ch = 0; ch < Ch; ch++) {
            float acc = 0;
            for (int j = 0; j < K; j++) {
                int p = t - (K - 1 - j) * dil; /* input position; < 0 reads the state */
                float in = p >= 0 ? x[(int64_t)p * Ch + ch] : state[(int64_t)(H + p) * Ch + ch];
                acc += w[(int64_t)ch * K + j] * in;
            }
            y[(int64_t)t * Ch + ch] = acc / (1.0f + expf(-acc));
        }
    /* new state: the last H inputs of [state | x]; rows move forward, so copy in increasing order */
    for (int r = 0; r < H; r++) {
        int p = T - H + r;
        for (int ch = 0; ch < Ch; ch++)
            state[(int64_t)r * Ch + ch] = p >= 0 ? x[(int64_t)p * Ch + ch] : state[(int64_t)(H + p) * Ch + ch];
    }
}

void ref_ngram_rows(const int32_t *ids, float *hist, int32_t *rows, int T, const ngram_hash *h) {
    const int N = h->n, nh = (N - 1) * h->heads_per;
    for (int t = 0; t < T; t++) {
        /* context c_0 = the token, c_j = the j-th previous token until an eos or the start */
        uint64_t ctx[NGRAM_MAX_N];
        ctx[0] = (uint64_t)ids[t];
        bool cut = false;
        for (int j = 1; j < N; j++) {
            int32_t prev;
            if (t - j >= 0)
                prev = ids[t - j];
            else {
                const int32_t hv = (int32_t)hist[N - 1 + (t - j)]; /* id + 1; 0 = none */
                prev = hv > 0 ? hv - 1 : h->eos;
            }
            cut = cut || prev == h->eos;
            ctx[j] = (uint64_t)(cut ? h->eos : prev);
        }
        uint64_t mix = ctx[0] * h->mult[0];
        for (int n = 2, g = 0; n <= N; n++) {
            mix ^= ctx[n - 1] * h->mult[n - 1];
            for (int k = 0; k < h->heads_per; k++, g++)
                rows[(int64_t)t * nh + g] = (int32_t)(mix % h->size[g] + h->offset[g]);
        }
    }
    /* the history keeps the last N-1 tokens of [hist | ids] */
    for (int r = 0; r < N - 1; r++) {
        int p = T - (N - 1) + r;
        hist[r] = p >= 0 ? (float)ids[p] + 1.0f : hist[N - 1 + p];
    }
}

void ref_qsa_block_keys(const float *raw, float *blk, int b0, int b1, int c, int D, const float *w, float eps,
                        const rope_params *rp) {
    for (int b = b0; b < b1; b++) {
        float *kb = blk + (int64_t)b * D;
        for (int d = 0; d < D; d++) {
            float acc = 0;
            for (int j = 0; j < c; j++) acc += raw[((int64_t)b * c + j) * D + d];
            kb[d] = acc / (float)c;
        }
        ref_rms_norm(kb, w, kb, 1, D, eps);
        const int32_t pos = b * c; /* the block's first token */
        ref_rope(kb, &pos, 1, 1, D, rp, NULL);
    }
}

void ref_qsa_select(const float *q, const float *blk, const int32_t *qpos, int32_t *sel, int T, int Hi, int D,
                    int c, int n_sel, float *scores) {
    for (int t = 0; t < T; t++) {
        int32_t *st = sel + (int64_t)t * n_sel;
        const int nb = (qpos[t] + 1) / c;
        for (int i = 0; i < n_sel; i++) st[i] = i < nb ? i : -1;
        if (nb <= n_sel) continue;
        for (int b = 0; b < nb; b++) {
            float s = 0;
            for (int h = 0; h < Hi; h++) {
                const float *qh = q + ((int64_t)t * Hi + h) * D, *kb = blk + (int64_t)b * D;
                float dot = 0;
                for (int d = 0; d < D; d++) dot += qh[d] * kb[d];
                s += dot > 0 ? dot : 0; /* relu per head, then the head sum */
            }
            scores[b] = s;
        }
        /* a block is selected iff fewer than n_sel blocks beat it (higher score, or equal and lower index) */
        int n = 0;
        for (int b = 0; b < nb; b++) {
            int better = 0;
            for (int o = 0; o < nb && better < n_sel; o++)
                better += scores[o] > scores[b] || (o < b && scores[o] == scores[b]);
            if (better < n_sel) st[n++] = b;
        }
    }
}

/* cache rows [r0, r1) of piece i of a selection: block st[i] (i < n_sel; empty if unused), then the tail */
static void sel_range(const int32_t *st, int i, int n_sel, int nb, int c, int p, int *r0, int *r1) {
    if (i == n_sel) {
        *r0 = nb * c, *r1 = p + 1;
    } else if (st[i] < 0) {
        *r0 = *r1 = 0;
    } else {
        *r0 = st[i] * c, *r1 = *r0 + c;
    }
}

void ref_attention_sparse(const float *q, const float *k, const float *v, float *out, const int32_t *qpos,
                          const int32_t *sel, int T, int Hq, int Hkv, int D, float scale, int c, int n_sel,
                          float *scores) {
    const int g = Hq / Hkv;
    for (int t = 0; t < T; t++) {
        const int p = qpos[t], nb = (p + 1) / c;
        const int32_t *st = sel + (int64_t)t * n_sel;
        for (int h = 0; h < Hq; h++) {
            const float *qh = q + ((int64_t)t * Hq + h) * D;
            const int kh = h / g;
            /* the key rows: the selected blocks, then the tail */
            int n = 0;
            float mx = -INFINITY;
            for (int i = 0; i <= n_sel; i++) {
                int r0, r1;
                sel_range(st, i, n_sel, nb, c, p, &r0, &r1);
                for (int r = r0; r < r1; r++) {
                    const float *kr = k + ((int64_t)r * Hkv + kh) * D;
                    float dot = 0;
                    for (int d = 0; d < D; d++) dot += qh[d] * kr[d];
                    scores[n] = dot * scale;
                    mx = scores[n] > mx ? scores[n] : mx;
                    n++;
                }
            }
            float sum = 0;
            for (int j = 0; j < n; j++) sum += (scores[j] = expf(scores[j] - mx));
            float *oh = out + ((int64_t)t * Hq + h) * D;
            memset(oh, 0, sizeof(float) * (size_t)D);
            n = 0;
            for (int i = 0; i <= n_sel; i++) {
                int r0, r1;
                sel_range(st, i, n_sel, nb, c, p, &r0, &r1);
                for (int r = r0; r < r1; r++, n++) {
                    const float *vr = v + ((int64_t)r * Hkv + kh) * D, pw = scores[n] / sum;
                    for (int d = 0; d < D; d++) oh[d] += pw * vr[d];
                }
            }
        }
    }
}
