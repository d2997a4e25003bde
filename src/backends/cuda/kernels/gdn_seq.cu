/* gdn_seq: the gated delta rule in its step form over T tokens of one sequence (ref_gdn_step applied T
 * times), for any head dims Dk <= 256: the executor's decode path (T = 1) and its prefill path where the
 * chunked kernel (gdn_chunk.cu: Dk == Dv == 128) does not apply.
 *
 * Per value head h and state column j (S[h][Dk][Dv], column j holds what value dim j accumulates):
 *     S <- exp(g) S;  u_j = beta (v_j - S[:, j] . k);  S[:, j] += k u_j;  o_j = S[:, j] . q
 * Columns are independent, so the state never leaves registers during the T tokens: grid (Hv, Dv / 32),
 * 256 threads = 8 warps; lane c owns column 32 * blockIdx.y + c and warp w rows w, w + 8, ... (Dk / 8
 * values a thread, kept in registers across the tokens: S is read once and written once per call). The
 * two column dot products are reduced over the 8 warps through shared memory. q and k of the token's key
 * head are staged in shared memory. */
#include <stdint.h>

#include "backends/cuda/kernels/cuda_common.cuh"

#define GDN_SEQ_MAXDK 256
#define GDN_SEQ_WARPS 8

__global__ void __launch_bounds__(32 * GDN_SEQ_WARPS)
    k_gdn_seq(float *__restrict__ S, const float *__restrict__ q, const float *__restrict__ k,
              const float *__restrict__ v, const float *__restrict__ g, const float *__restrict__ beta,
              float *__restrict__ o, int T, int Hk, int Hv, int Dk, int Dv, int map) {
    pdl_enter();
    constexpr int RPT = GDN_SEQ_MAXDK / GDN_SEQ_WARPS; /* rows per thread at most */
    __shared__ float qs[GDN_SEQ_MAXDK], ks[GDN_SEQ_MAXDK], red[GDN_SEQ_WARPS][32];
    const int h = blockIdx.x, lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
    const int j = blockIdx.y * 32 + lane;
    const bool col = j < Dv;
    const int hk = map == GDN_HEADS_TILED ? h % Hk : h / (Hv / Hk); /* gdn_key_head (host-only) */
    float *Sh = S + (int64_t)h * Dk * Dv;
    float s[RPT];
#pragma unroll
    for (int i = 0; i < RPT; i++) {
        const int r = wp + GDN_SEQ_WARPS * i;
        s[i] = col && r < Dk ? Sh[(int64_t)r * Dv + j] : 0.0f;
    }
    for (int t = 0; t < T; t++) {
        __syncthreads(); /* the previous token's readers of qs / ks / red are done */
        for (int d = threadIdx.x; d < Dk; d += blockDim.x) {
            qs[d] = q[((int64_t)t * Hk + hk) * Dk + d];
            ks[d] = k[((int64_t)t * Hk + hk) * Dk + d];
        }
        __syncthreads();
        const float decay = expf(g[(int64_t)t * Hv + h]), b = beta[(int64_t)t * Hv + h];
        float part = 0.0f;
#pragma unroll
        for (int i = 0; i < RPT; i++) {
            const int r = wp + GDN_SEQ_WARPS * i;
            if (r < Dk) part = fmaf(s[i], ks[r], part);
        }
        red[wp][lane] = part;
        __syncthreads();
        float sk = 0.0f;
#pragma unroll
        for (int w = 0; w < GDN_SEQ_WARPS; w++) sk += red[w][lane];
        const float vj = col ? v[((int64_t)t * Hv + h) * Dv + j] : 0.0f;
        const float u = b * (vj - decay * sk);
        part = 0.0f;
#pragma unroll
        for (int i = 0; i < RPT; i++) {
            const int r = wp + GDN_SEQ_WARPS * i;
            if (r < Dk) {
                s[i] = fmaf(ks[r], u, decay * s[i]);
                part = fmaf(s[i], qs[r], part);
            }
        }
        __syncthreads(); /* every thread has read red for sk */
        red[wp][lane] = part;
        __syncthreads();
        if (wp == 0 && col) {
            float oj = 0.0f;
#pragma unroll
            for (int w = 0; w < GDN_SEQ_WARPS; w++) oj += red[w][lane];
            o[((int64_t)t * Hv + h) * Dv + j] = oj;
        }
    }
#pragma unroll
    for (int i = 0; i < RPT; i++) {
        const int r = wp + GDN_SEQ_WARPS * i;
        if (col && r < Dk) Sh[(int64_t)r * Dv + j] = s[i];
    }
}

extern "C" int cuda_gdn_seq(float *S, const float *q, const float *k, const float *v, const float *g,
                            const float *beta, float *o, int T, int Hk, int Hv, int Dk, int Dv, enum gdn_head_map map,
                            cudaStream_t st) {
    if (!S || !q || !k || !v || !g || !beta || !o || T < 0 || Hk < 1 || Hv < 1 || Hv % Hk || Dk < 1 ||
        Dk > GDN_SEQ_MAXDK || Dv < 1 || Hv > 0x7fffffff || (map != GDN_HEADS_TILED && map != GDN_HEADS_GROUPED))
        return CUDA_KERR_ARGS;
    if (!T) return CUDA_KERR_OK;
    dim3 grid((unsigned)Hv, (unsigned)((Dv + 31) / 32));
    kl(k_gdn_seq, grid, 32 * GDN_SEQ_WARPS, 0, st, S, q, k, v, g, beta, o, T, Hk, Hv, Dk, Dv, (int)map);
    return launch_status();
}
