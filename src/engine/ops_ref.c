/* ops_ref: naive reference ops (see ops_ref.h). Plain loops, fp32 throughout; double only where a sum
 * over a long axis would otherwise make the oracle itself the noisiest thing in a comparison. */
#include "engine/ops_ref.h"

#include <math.h>
#include <string.h>

void ref_rms_norm(const float *x, const float *w, float *y, int T, int C, float eps) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (int64_t)t * C;
        float *yt = y + (int64_t)t * C;
        double ss = 0;
        for (int c = 0; c < C; c++) ss += (double)xt[c] * xt[c];
        float inv = 1.0f / sqrtf((float)(ss / C) + eps);
        for (int c = 0; c < C; c++) yt[c] = xt[c] * inv * (w ? w[c] : 1.0f);
    }
}

void ref_rope(float *x, const int32_t *pos, int T, int H, int D, const rope_params *rp, const float *factors) {
    int half = rp->n_rot / 2;
    /* NORM pairs (2i, 2i+1); NEOX pairs (i, i + half) */
    int stride = rp->mode == ROPE_NORM ? 2 : 1, other = rp->mode == ROPE_NORM ? 1 : half;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            float *xh = x + ((int64_t)t * H + h) * D;
            for (int i = 0; i < half; i++) {
                float freq = powf(rp->theta, -2.0f * (float)i / (float)rp->n_rot);
                if (factors) freq /= factors[i];
                float ang = (float)pos[t] * rp->freq_scale * freq;
                float c = cosf(ang), s = sinf(ang);
                float *pa = xh + i * stride, *pb = pa + other;
                float a = *pa, b = *pb;
                *pa = a * c - b * s;
                *pb = a * s + b * c;
            }
        }
}

void ref_add_bias(float *y, const float *b, int T, int N) {
    for (int t = 0; t < T; t++)
        for (int n = 0; n < N; n++) y[(int64_t)t * N + n] += b[n];
}

void ref_geglu(const float *g, const float *u, float *y, int64_t n) {
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (int64_t i = 0; i < n; i++) {
        float x = g[i];
        y[i] = 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x))) * u[i];
    }
}

void ref_scale(float *y, float s, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] *= s;
}

void ref_l2_norm(float *x, int T, int H, int D, float eps, float scale) {
    for (int64_t r = 0; r < (int64_t)T * H; r++) {
        float *xr = x + r * D;
        double ss = 0;
        for (int d = 0; d < D; d++) ss += (double)xr[d] * xr[d];
        float inv = scale / sqrtf((float)ss + eps);
        for (int d = 0; d < D; d++) xr[d] *= inv;
    }
}

void ref_attention(const float *q, const float *k, const float *v, float *out, const int32_t *qpos,
                   const int32_t *kpos, int T, int S, int Hq, int Hkv, int D, float scale, int window,
                   float *scores) {
    int group = Hq / Hkv;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < Hq; h++) {
            const float *qh = q + ((int64_t)t * Hq + h) * D;
            float *oh = out + ((int64_t)t * Hq + h) * D;
            int kvh = h / group;
            float mx = -INFINITY;
            for (int s = 0; s < S; s++) {
                if (kpos[s] > qpos[t] || (window > 0 && qpos[t] - kpos[s] >= window)) {
                    scores[s] = -INFINITY;
                    continue;
                }
                const float *ks = k + ((int64_t)s * Hkv + kvh) * D;
                float dot = 0;
                for (int d = 0; d < D; d++) dot += qh[d] * ks[d];
                scores[s] = dot * scale;
                if (scores[s] > mx) mx = scores[s];
            }
            double sum = 0;
            for (int s = 0; s < S; s++) {
                scores[s] = scores[s] == -INFINITY ? 0.0f : expf(scores[s] - mx);
                sum += scores[s];
            }
            memset(oh, 0, sizeof(float) * (size_t)D);
            if (sum == 0) continue; /* no visible key: output 0 (cannot happen for a causal prompt) */
            for (int s = 0; s < S; s++) {
                if (scores[s] == 0.0f) continue;
                float p = (float)(scores[s] / sum);
                const float *vs = v + ((int64_t)s * Hkv + kvh) * D;
                for (int d = 0; d < D; d++) oh[d] += p * vs[d];
            }
        }
}

void ref_conv1d_silu(const float *x, float *state, const float *w, float *y, int T, int Ch, int K) {
    ref_conv1d_dilated_silu(x, state, w, y, T, Ch, K, 1);
}

void ref_gdn_step(float *S, const float *q, const float *k, const float *v, const float *g,
                  const float *beta, float *o, int Hk, int Hv, int Dk, int Dv, enum gdn_head_map map) {
    for (int j = 0; j < Hv; j++) {
        int hk = gdn_key_head(j, Hk, Hv, map);
        const float *qj = q + (int64_t)hk * Dk, *kj = k + (int64_t)hk * Dk, *vj = v + (int64_t)j * Dv;
        float *Sj = S + (int64_t)j * Dk * Dv, *oj = o + (int64_t)j * Dv;
        float decay = expf(g[j]);
        for (int64_t i = 0; i < (int64_t)Dk * Dv; i++) Sj[i] *= decay;
        for (int b = 0; b < Dv; b++) {
            float m = 0; /* (S^T k)[b] */
            for (int a = 0; a < Dk; a++) m += Sj[(int64_t)a * Dv + b] * kj[a];
            float u = beta[j] * (vj[b] - m);
            for (int a = 0; a < Dk; a++) Sj[(int64_t)a * Dv + b] += kj[a] * u;
        }
        for (int b = 0; b < Dv; b++) {
            float acc = 0;
            for (int a = 0; a < Dk; a++) acc += Sj[(int64_t)a * Dv + b] * qj[a];
            oj[b] = acc;
        }
    }
}

int64_t ref_gdn_chunk_scratch(int chunk, int Dk, int Dv) {
    return (int64_t)chunk * (2 * Dv + Dk + 1 + chunk);
}

static float dotf(const float *a, const float *b, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* One head, one chunk of c tokens (the math of ops_ref.h / spec §2.3.7), with local index i:
 *   gam_i = sum_{l<=i} g_l;  L_ij = beta_i (k_i.k_j) exp(gam_i - gam_j)  (j < i)
 *   (I + L) U = diag(beta) V          (U: c x Dv)
 *   (I + L) W = diag(beta exp(gam)) K (W: c x Dk)
 *   V' = U - W S                      (the true per-token deltas u_i)
 *   O_i = exp(gam_i) S^T q_i + sum_{j<=i} (q_i.k_j) exp(gam_i - gam_j) V'_j
 *   S  <- exp(gam_last) S + sum_j exp(gam_last - gam_j) k_j V'_j^T
 * Only non-positive exponents are ever taken (gam is non-increasing), so nothing overflows. */
static void gdn_chunk_head(float *S, const float *q, const float *k, const float *v, const float *g,
                           const float *beta, float *o, int c, int64_t qk_stride, int64_t v_stride,
                           int64_t gb_stride, int Dk, int Dv, float *scratch, int chunk) {
    float *U = scratch, *Vp = U + (int64_t)chunk * Dv, *W = Vp + (int64_t)chunk * Dv;
    float *gam = W + (int64_t)chunk * Dk, *Lm = gam + chunk;
    float acc = 0;
    for (int i = 0; i < c; i++) gam[i] = (acc += g[i * gb_stride]);
    for (int i = 0; i < c; i++)
        for (int j = 0; j < i; j++)
            Lm[i * chunk + j] = beta[i * gb_stride] * dotf(k + i * qk_stride, k + j * qk_stride, Dk) *
                                expf(gam[i] - gam[j]);
    /* forward substitution for U and W */
    for (int i = 0; i < c; i++) {
        float bi = beta[i * gb_stride], bgi = bi * expf(gam[i]);
        for (int b = 0; b < Dv; b++) U[(int64_t)i * Dv + b] = bi * v[i * v_stride + b];
        for (int a = 0; a < Dk; a++) W[(int64_t)i * Dk + a] = bgi * k[i * qk_stride + a];
        for (int j = 0; j < i; j++) {
            float l = Lm[i * chunk + j];
            for (int b = 0; b < Dv; b++) U[(int64_t)i * Dv + b] -= l * U[(int64_t)j * Dv + b];
            for (int a = 0; a < Dk; a++) W[(int64_t)i * Dk + a] -= l * W[(int64_t)j * Dk + a];
        }
    }
    /* V' = U - W S */
    for (int i = 0; i < c; i++)
        for (int b = 0; b < Dv; b++) {
            float ws = 0;
            for (int a = 0; a < Dk; a++) ws += W[(int64_t)i * Dk + a] * S[(int64_t)a * Dv + b];
            Vp[(int64_t)i * Dv + b] = U[(int64_t)i * Dv + b] - ws;
        }
    /* outputs (from the incoming state) */
    for (int i = 0; i < c; i++) {
        const float *qi = q + i * qk_stride;
        float *oi = o + i * v_stride;
        float Gi = expf(gam[i]);
        for (int b = 0; b < Dv; b++) {
            float sq = 0;
            for (int a = 0; a < Dk; a++) sq += S[(int64_t)a * Dv + b] * qi[a];
            oi[b] = Gi * sq;
        }
        for (int j = 0; j <= i; j++) {
            float w = dotf(qi, k + j * qk_stride, Dk) * expf(gam[i] - gam[j]);
            for (int b = 0; b < Dv; b++) oi[b] += w * Vp[(int64_t)j * Dv + b];
        }
    }
    /* state update */
    float Gc = expf(gam[c - 1]);
    for (int64_t i = 0; i < (int64_t)Dk * Dv; i++) S[i] *= Gc;
    for (int j = 0; j < c; j++) {
        float w = expf(gam[c - 1] - gam[j]);
        const float *kj = k + j * qk_stride;
        for (int a = 0; a < Dk; a++)
            for (int b = 0; b < Dv; b++) S[(int64_t)a * Dv + b] += w * kj[a] * Vp[(int64_t)j * Dv + b];
    }
}

void ref_gdn_chunk(float *S, const float *q, const float *k, const float *v, const float *g,
                   const float *beta, float *o, int T, int Hk, int Hv, int Dk, int Dv, int chunk,
                   enum gdn_head_map map, float *scratch) {
    int64_t qk_stride = (int64_t)Hk * Dk, v_stride = (int64_t)Hv * Dv;
    for (int j = 0; j < Hv; j++) {
        int hk = gdn_key_head(j, Hk, Hv, map);
        for (int t0 = 0; t0 < T; t0 += chunk) {
            int c = T - t0 < chunk ? T - t0 : chunk;
            gdn_chunk_head(S + (int64_t)j * Dk * Dv, q + t0 * qk_stride + (int64_t)hk * Dk,
                           k + t0 * qk_stride + (int64_t)hk * Dk, v + t0 * v_stride + (int64_t)j * Dv,
                           g + (int64_t)t0 * Hv + j, beta + (int64_t)t0 * Hv + j, o + t0 * v_stride + (int64_t)j * Dv,
                           c, qk_stride, v_stride, Hv, Dk, Dv, scratch, chunk);
        }
    }
}

void ref_moe_route(const float *l, int E, int K, bool sigmoid, bool renorm, float *p, int32_t *sel, float *w) {
    if (!sigmoid) {
        float mx = -INFINITY;
        double sum = 0;
        for (int i = 0; i < E; i++) mx = l[i] > mx ? l[i] : mx;
        for (int i = 0; i < E; i++) sum += (p[i] = expf(l[i] - mx));
        for (int i = 0; i < E; i++) p[i] = (float)(p[i] / sum);
    } else {
        for (int i = 0; i < E; i++) p[i] = 1.0f / (1.0f + expf(-l[i]));
    }
    float tot = 0;
    for (int j = 0; j < K; j++) { /* top-k by selection; ties go to the lower expert id */
        int best = -1;
        for (int i = 0; i < E; i++) {
            bool taken = false;
            for (int q = 0; q < j; q++) taken |= sel[q] == i;
            if (!taken && (best < 0 || p[i] > p[best])) best = i;
        }
        sel[j] = best;
        tot += w[j] = p[best];
    }
    if (renorm)
        for (int j = 0; j < K; j++) w[j] /= tot;
}
