/* check_gdn: conformance cases of the fused Gated DeltaNet decode step (kernels/gdn_step.cu) against the
 * CPU's chain of reference ops for one token: ref_conv1d_silu, the l2 norms (ref_l2_norm), the gates
 * (the formula of the CPU backend's gdn_gates, written here), ref_gdn_step and the gated norm
 * (ref_rms_norm, then times silu(z)).
 *   covers: k_gdn_step
 *
 * Error model (each side float; the bound covers both). With g = (2 Dk + 48) 2^-24 (a Dk-term sum, the
 * l2 norms' Dk squares, a few roundings more), D_b = e^g S_b (the decayed column) and u_b = beta (v_b -
 * m_b), m_b = sum_a D_ab k_a, all evaluated in double here:
 *   du_b  <= g beta (sum_a |D_ab k_a| + |v_b|)                           (m's sum, v's conv, beta)
 *   dS_ab <= g (|D_ab| + |k_a u_b|) + |k_a| du_b                          (S' = D + k u, both terms)
 *   e_b   <= sum_a |q_a| dS_ab + g sum_a |S'_ab q_a|                      (o = S'^T q)
 * the gated norm divides by rms(o): relative error r = sum_b e_b |o_b| / sum_b o_b^2 + (Dv + 8) 2^-24, so
 *   |out_b - ref_b| <= 2 (|w_b silu(z_b)| inv (e_b + |o_b| r) + 8 2^-24 |ref_b|),  |S' - ref| <= 2 dS.
 * (The first version bounded dS by |S'| instead of |D| + |k u|, which fails where the two cancel; seen on
 * the H200 at 1.6-27x the bound, and kept as the reason for the form above.) The conv state must come
 * out exactly (copies only, in place: a channel shifted before its last reader read it would differ). With
 * n > 1 sequences each has its own states and rows and is checked as above; the q8_1 rows of o the kernel
 * writes for the next GEMV must equal the host quantizer's (check_ref_q8_1) of the kernel's own o. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/check_decode.h"
#include "backends/cuda/check_util.h"
#include "backends/cuda/kernels.h"

#define U24 0x1p-24
#define GD 128

typedef struct gdn_bench { cuda_gdn_args a; } gdn_bench;
static int gdn_launch(void *ctx, int i, cudaStream_t s) {
    (void)i; /* the states advance in place, as in a decode loop */
    return cuda_gdn_step(&((gdn_bench *)ctx)->a, s) ? ERR_IO : 0;
}

int check_gdn(int Hk, int Hv, enum gdn_head_map map, int n, uint64_t seed, bool bench, cuda_check_result *res, err *e) {
    const int Kc = 4, dc = 2 * Hk * GD + Hv * GD, vw = Hv * GD;
    const float eps = 1e-6f;
    size_t nS = (size_t)Hv * GD * GD, nst = (size_t)(Kc - 1) * dc;
    dpool dp = {0};
    int rc = 0;
    float *qkv = hmalloc(4 * (size_t)n * dc, e), *cin = hmalloc(4 * n * nst, e), *cw = hmalloc(4 * (size_t)dc * Kc, e);
    float *al = hmalloc(4 * (size_t)n * Hv, e), *br = hmalloc(4 * (size_t)n * Hv, e), *A = hmalloc(4 * (size_t)Hv, e);
    float *dt = hmalloc(4 * (size_t)Hv, e), *z = hmalloc(4 * (size_t)n * vw, e), *nw = hmalloc(4 * GD, e);
    float *S = hmalloc(4 * n * nS, e), *S0 = hmalloc(4 * n * nS, e), *Sg = hmalloc(4 * n * nS, e);
    float *o = hmalloc(4 * (size_t)vw, e), *og = hmalloc(4 * (size_t)n * vw, e), *conv = hmalloc(4 * (size_t)dc, e);
    float *cout = hmalloc(4 * n * nst, e), *g = hmalloc(4 * (size_t)Hv, e), *beta = hmalloc(4 * (size_t)Hv, e);
    float *onorm = hmalloc(4 * (size_t)vw, e), *dsg = hmalloc(4 * (size_t)n * vw / 16, e);
    float *dsr = hmalloc(4 * (size_t)vw / 16, e);
    int8_t *xqg = hmalloc((size_t)n * vw, e), *xqr = hmalloc((size_t)vw, e);
    uint32_t *counters = hmalloc(4 * (size_t)n * (Hv + Hk), e);
    if (!qkv || !cin || !cw || !al || !br || !A || !dt || !z || !nw || !S || !S0 || !Sg || !o || !og || !conv ||
        !cout || !g || !beta || !onorm || !dsg || !dsr || !xqg || !xqr || !counters) {
        rc = ERR_NOMEM;
        goto done;
    }
    rng r;
    rng_seed(&r, seed);
    fill_normal(&r, qkv, (int64_t)n * dc, 1.0f);
    fill_normal(&r, cin, (int64_t)(n * nst), 1.0f);
    fill_normal(&r, cw, (int64_t)dc * Kc, 0.5f);
    fill_normal(&r, al, (int64_t)n * Hv, 1.0f);
    fill_normal(&r, br, (int64_t)n * Hv, 1.0f);
    for (int j = 0; j < Hv; j++) A[j] = -expf(0.5f * rng_normal(&r));
    fill_normal(&r, dt, Hv, 0.5f);
    fill_normal(&r, z, (int64_t)n * vw, 1.0f);
    fill_uniform(&r, nw, GD, 0.5f, 1.5f);
    fill_normal(&r, S, (int64_t)(n * nS), 0.05f);
    memcpy(S0, S, 4 * n * nS);
    cuda_gdn_args a = {.n = n, .Hk = Hk, .Hv = Hv, .Dk = GD, .Dv = GD, .Kc = Kc, .map = map, .eps = eps};
    if (!(a.qkv = dpool_up(&dp, qkv, 4 * (size_t)n * dc, e)) ||
        !(a.conv_w = dpool_up(&dp, cw, 4 * (size_t)dc * Kc, e)) ||
        !(a.alpha = dpool_up(&dp, al, 4 * (size_t)n * Hv, e)) ||
        !(a.beta_raw = dpool_up(&dp, br, 4 * (size_t)n * Hv, e)) ||
        !(a.ssm_a = dpool_up(&dp, A, 4 * (size_t)Hv, e)) || !(a.dt_bias = dpool_up(&dp, dt, 4 * (size_t)Hv, e)) ||
        !(a.z = dpool_up(&dp, z, 4 * (size_t)n * vw, e)) || !(a.norm_w = dpool_up(&dp, nw, 4 * GD, e)) ||
        !(a.o = dpool_alloc(&dp, 4 * (size_t)n * vw, e)) || !(a.xq = dpool_alloc(&dp, (size_t)n * vw, e)) ||
        !(a.ds = dpool_alloc(&dp, 4 * (size_t)n * vw / 16, e)) ||
        !(a.sync = dpool_alloc(&dp, 4 * (size_t)n * (Hv + Hk), e)) ||
        cu_check(cudaMemset(a.sync, 0, 4 * (size_t)n * (Hv + Hk)), e, "cudaMemset")) {
        rc = e->code;
        goto done;
    }
    for (int i = 0; i < n; i++)
        if (!(a.seq[i].conv = dpool_up(&dp, cin + i * nst, 4 * nst, e)) ||
            !(a.seq[i].S = dpool_up(&dp, S + i * nS, 4 * nS, e))) {
            rc = e->code;
            goto done;
        }
    if ((rc = kcheck(cuda_gdn_step(&a, 0), e, "cuda_gdn_step")) ||
        (rc = cu_download(og, a.o, 4 * (size_t)n * vw, e)) || (rc = cu_download(xqg, a.xq, (size_t)n * vw, e)) ||
        (rc = cu_download(dsg, a.ds, 4 * (size_t)n * vw / 16, e)) ||
        (rc = cu_download(counters, a.sync, 4 * (size_t)n * (Hv + Hk), e)))
        goto done;
    for (int i = 0; i < n; i++)
        if ((rc = cu_download(Sg + i * nS, a.seq[i].S, 4 * nS, e)) ||
            (rc = cu_download(cout + i * nst, a.seq[i].conv, 4 * nst, e)))
            goto done;
    int64_t sync_left = 0, conv_bad = 0, q8_bad = 0; /* the counters must be back at zero */
    for (int i = 0; i < n * (Hv + Hk); i++) sync_left += counters[i] != 0;
    tally to, ts;
    tally_init(&to), tally_init(&ts);
    double gam = (2.0 * GD + 48) * U24;
    for (int sn = 0; sn < n; sn++) {
        /* the CPU chain for sequence sn (its conv state advanced in cin, its S in S) */
        float *cst = cin + sn * nst, *Ss = S + sn * nS, *S0s = S0 + sn * nS;
        const float *ogs = og + (size_t)sn * vw, *zs = z + (size_t)sn * vw;
        ref_conv1d_silu(qkv + (size_t)sn * dc, cst, cw, conv, 1, dc, Kc);
        float *q = conv, *k = conv + Hk * GD, *v = conv + 2 * Hk * GD;
        ref_l2_norm(q, 1, Hk, GD, eps, 1.0f / sqrtf((float)GD));
        ref_l2_norm(k, 1, Hk, GD, eps, 1.0f);
        for (int j = 0; j < Hv; j++) {
            float x = al[sn * Hv + j] + dt[j];
            float sp = x > 20.0f ? x : log1pf(expf(x));
            g[j] = A[j] * sp;
            beta[j] = 1.0f / (1.0f + expf(-br[sn * Hv + j]));
        }
        ref_gdn_step(Ss, q, k, v, g, beta, o, Hk, Hv, GD, GD, map);
        ref_rms_norm(o, nw, onorm, Hv, GD, eps);
        for (int i = 0; i < vw; i++) onorm[i] *= zs[i] / (1.0f + expf(-zs[i]));
        for (size_t i = 0; i < nst; i++) conv_bad += memcmp(&cout[sn * nst + i], &cst[i], 4) != 0;
        check_ref_q8_1(ogs, xqr, dsr, vw);
        q8_bad += memcmp(xqr, xqg + (size_t)sn * vw, (size_t)vw) != 0;
        q8_bad += memcmp(dsr, dsg + (size_t)sn * vw / 16, 4 * (size_t)vw / 16) != 0;
        /* bounds */
        for (int j = 0; j < Hv; j++) {
            int hk = gdn_key_head(j, Hk, Hv, map);
            const float *qj = q + hk * GD, *kj = k + hk * GD, *S0j = S0s + (size_t)j * GD * GD;
            const float *Sj = Ss + (size_t)j * GD * GD;
            double decay = exp(g[j]), eb[GD], num = 0, den = 0;
            for (int b = 0; b < GD; b++) {
                double sk = 0, m = 0, sq = 0, eq = 0;
                for (int a2 = 0; a2 < GD; a2++) {
                    double D = S0j[a2 * GD + b] * decay;
                    sk += fabs(D * kj[a2]);
                    m += D * kj[a2];
                    sq += fabs((double)Sj[a2 * GD + b] * qj[a2]);
                }
                double u = beta[j] * (v[j * GD + b] - m), du = gam * beta[j] * (sk + fabs(v[j * GD + b]));
                for (int a2 = 0; a2 < GD; a2++) {
                    double dS = gam * (fabs(S0j[a2 * GD + b] * decay) + fabs(kj[a2] * u)) + fabs(kj[a2]) * du;
                    eq += fabs(qj[a2]) * dS;
                    tally_note(&ts, (int64_t)sn * nS + (int64_t)j * GD * GD + a2 * GD + b,
                               Sg[sn * nS + (size_t)j * GD * GD + a2 * GD + b], Sj[a2 * GD + b], 2 * dS + 1e-37);
                }
                eb[b] = eq + gam * sq;
                num += eb[b] * fabs(o[j * GD + b]);
                den += (double)o[j * GD + b] * o[j * GD + b];
            }
            double rr = num / (den + 1e-300) + (GD + 8) * U24, inv = 1.0 / sqrt(den / GD + eps);
            for (int b = 0; b < GD; b++) {
                int i = j * GD + b;
                double ws = fabs(nw[b] * zs[i] / (1.0 + exp(-zs[i])));
                double bound = 2 * (ws * inv * (eb[b] + fabs(o[i]) * rr) + 8 * U24 * fabs(onorm[i]));
                tally_note(&to, (int64_t)sn * vw + i, ogs[i], onorm[i], bound + 1e-37);
            }
        }
    }
    res->max_err = fmax(fmax(to.worst, ts.worst), conv_bad || sync_left || q8_bad ? INFINITY : 0);
    res->tol = 1;
    snprintf(res->detail, sizeof res->detail,
             "/bound: out %.2g, state %.2g; conv values off %lld, counters left %lld, q8_1 off %lld",
             to.worst, ts.worst, (long long)conv_bad, (long long)sync_left, (long long)q8_bad);
    if (bench) {
        gdn_bench gb = {a};
        double us;
        if ((rc = cu_time(gdn_launch, &gb, 2, &us, e))) goto done;
        res->us = us;
        res->gbps = (double)n * nS * 8 / us * 1e-3; /* state read + written; the rest is < 2% */
    }
done:
    dpool_free(&dp);
    free(qkv), free(cin), free(cw), free(al), free(br), free(A), free(dt), free(z), free(nw), free(S), free(S0), free(Sg);
    free(o), free(og), free(conv), free(cout), free(g), free(beta), free(onorm), free(dsg), free(dsr), free(xqg);
    free(xqr), free(counters);
    return rc;
}
