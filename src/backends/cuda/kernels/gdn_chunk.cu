/* gdn_chunk: the gated delta rule over a prompt in chunks of 64 tokens (the WY / UT form of ref_gdn_chunk),
 * fp32 throughout, for Dk = Dv = 128 (qwen35, qwen3next).
 *
 * Math per value head j, chunk of c tokens, local index i (ops_ref.c's gdn_chunk_head):
 *   gam_i = sum_{l<=i} g_l;  L_ij = beta_i (k_i.k_j) exp(gam_i - gam_j)   (j < i)
 *   (I + L) U = diag(beta) V;   (I + L) W = diag(beta exp(gam)) K
 *   V' = U - W S;   O_i = exp(gam_i) S^T q_i + sum_{j<=i} (q_i.k_j) exp(gam_i - gam_j) V'_j
 *   S <- exp(gam_last) S + sum_j exp(gam_last - gam_j) k_j V'_j^T
 * Only differences gam_i - gam_j with j <= i (<= 0) are exponentiated, so nothing overflows; rows past the
 * end of a short last chunk are zero and never exponentiated.
 *
 * Two kernels, because only the state recurrence is sequential:
 *  - gdn_chunk_prep_kernel, grid (chunks, Hv), 256 threads: everything that does not need S, for every chunk
 *    at once: gam, U, W (forward substitution, one thread per column of [U | W], in place in shared memory)
 *    and the masked intra-chunk matrix A_ij = (q_i.k_j) exp(gam_i - gam_j), j <= i. Written to scratch.
 *  - gdn_chunk_scan_kernel, grid (Dv/32, Hv), 256 threads: columns of S are independent in the recurrence,
 *    so each block owns a 128 x 32 slice of one head's state in shared memory and walks the chunks in order:
 *    V' = U - W S, O = exp(gam) (Q S) + A V', S update. Each thread holds a 2 x 4 (V', O) or 4 x 4 (S)
 *    register tile so one shared load feeds several FMAs.
 * The state S[Hv][Dk][Dv] is read at the start and the final state written back, as ref_gdn_chunk leaves it:
 * the state decode continues from. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "backends/cuda/kernels.h"
#include "backends/cuda/kernels/cuda_common.cuh"
#include "backends/cuda/kernels/prefill_mma.cuh"

#define GDN_C 64
#define GDN_D 128          /* Dk = Dv */
#define GDN_PAD (GDN_D + 1) /* padded rows for the row-against-row dots (no bank conflicts) */
#define GDN_THREADS 256
#define GDN_SLICE 32       /* state columns per scan block */
#define GDN_WPAD (GDN_D + 4) /* W and Q rows in the scan: the 4 rows a warp reads at once hit different banks */

/* floats of scratch per (head, chunk): U [C][D], W [C][D], A [C][C], gam [C] */
#define GDN_PER (2 * GDN_C * GDN_D + GDN_C * GDN_C + GDN_C)

__device__ __forceinline__ int gdn_kh(int j, int Hk, int Hv, int grouped) { return grouped ? j / (Hv / Hk) : j % Hk; }

/* grid (nchunks, Hv), 256 threads; shared: k, q [C][D+1], v [C][D], L [C][C], gam, beta */
__global__ void __launch_bounds__(GDN_THREADS)
    gdn_chunk_prep_kernel(const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ v,
                          const float *__restrict__ g, const float *__restrict__ beta, float *__restrict__ scratch,
                          int T, int Hk, int Hv, int grouped) {
    pdl_enter();
    extern __shared__ float sm[];
    float *ks = sm, *qs = ks + GDN_C * GDN_PAD, *vs = qs + GDN_C * GDN_PAD, *Ls = vs + GDN_C * GDN_D;
    float *gam = Ls + GDN_C * GDN_C, *bs = gam + GDN_C;
    const int ci = blockIdx.x, j = blockIdx.y, kh = gdn_kh(j, Hk, Hv, grouped), tid = threadIdx.x;
    const int t0 = ci * GDN_C, c = min(GDN_C, T - t0);
    float *out = scratch + ((size_t)j * gridDim.x + ci) * GDN_PER;
    float *U = out, *W = U + GDN_C * GDN_D, *A = W + GDN_C * GDN_D, *gout = A + GDN_C * GDN_C;

    for (int i = tid; i < GDN_C * GDN_D; i += GDN_THREADS) {
        const int r = i / GDN_D, a = i % GDN_D;
        const bool in = r < c;
        ks[r * GDN_PAD + a] = in ? k[((size_t)(t0 + r) * Hk + kh) * GDN_D + a] : 0.f;
        qs[r * GDN_PAD + a] = in ? q[((size_t)(t0 + r) * Hk + kh) * GDN_D + a] : 0.f;
        vs[r * GDN_D + a] = in ? v[((size_t)(t0 + r) * Hv + j) * GDN_D + a] : 0.f;
    }
    if (tid < GDN_C) bs[tid] = tid < c ? beta[(size_t)(t0 + tid) * Hv + j] : 0.f;
    if (tid == 0) { /* the cumulative log-gate, in the reference's order; rows past c repeat the last */
        float acc = 0.f;
        for (int i = 0; i < GDN_C; i++) gam[i] = (acc += i < c ? g[(size_t)(t0 + i) * Hv + j] : 0.f);
    }
    __syncthreads();

    /* L (strictly lower) and A (lower with diagonal): each thread a 4 x 4 block of (i, j) */
    {
        const int bi = tid / 16, bj = tid % 16;
        float dk[4][4] = {}, dq[4][4] = {};
        if (bj <= bi)
            for (int a = 0; a < GDN_D; a++) {
                float ki[4], qi[4], kj[4];
#pragma unroll
                for (int r = 0; r < 4; r++) {
                    ki[r] = ks[(4 * bi + r) * GDN_PAD + a];
                    qi[r] = qs[(4 * bi + r) * GDN_PAD + a];
                    kj[r] = ks[(4 * bj + r) * GDN_PAD + a];
                }
#pragma unroll
                for (int r = 0; r < 4; r++)
#pragma unroll
                    for (int s = 0; s < 4; s++) {
                        dk[r][s] += ki[r] * kj[s];
                        dq[r][s] += qi[r] * kj[s];
                    }
            }
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int s = 0; s < 4; s++) {
                const int ii = 4 * bi + r, jj = 4 * bj + s;
                const float e = jj <= ii ? expf(gam[ii] - gam[jj]) : 0.f;
                Ls[ii * GDN_C + jj] = jj < ii ? bs[ii] * dk[r][s] * e : 0.f;
                A[ii * GDN_C + jj] = dq[r][s] * e;
            }
    }
    __syncthreads();

    /* forward substitution, one column per thread: columns 0..D-1 of U (in vs), D..2D-1 of W (in ks) */
    {
        const bool isU = tid < GDN_D;
        const int col = isU ? tid : tid - GDN_D;
        float *x = isU ? vs + col : ks + col;
        const int stride = isU ? GDN_D : GDN_PAD;
        for (int i = 0; i < c; i++) {
            float xi = (isU ? bs[i] : bs[i] * expf(gam[i])) * x[i * stride];
            for (int jj = 0; jj < i; jj++) xi -= Ls[i * GDN_C + jj] * x[jj * stride];
            x[i * stride] = xi;
        }
        for (int i = 0; i < GDN_C; i++) (isU ? U : W)[i * GDN_D + col] = i < c ? x[i * stride] : 0.f;
    }
    if (tid < GDN_C) gout[tid] = gam[tid];
}

/* grid (Dv / 32, Hv), 256 threads; shared: S slice [D][32], W, Q [C][D + 4], V' [C][32], A [C][C], gam
 * (107 KB: two blocks per SM, so the 192 blocks of a 48-head layer run in one wave); K and U are read from
 * global memory (L1/L2) where they are used. o[T][Hv][Dv]; S[Hv][Dk][Dv] in/out. */
__global__ void __launch_bounds__(GDN_THREADS)
    gdn_chunk_scan_kernel(const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ scratch,
                          float *__restrict__ o, float *__restrict__ S, int T, int Hk, int Hv, int grouped) {
    pdl_enter();
    extern __shared__ float sm[];
    float *Ss = sm, *Ws = Ss + GDN_D * GDN_SLICE, *Qs = Ws + GDN_C * GDN_WPAD;
    float *Vp = Qs + GDN_C * GDN_WPAD, *As = Vp + GDN_C * GDN_SLICE, *gam = As + GDN_C * GDN_C;
    const int b0 = blockIdx.x * GDN_SLICE, j = blockIdx.y, kh = gdn_kh(j, Hk, Hv, grouped), tid = threadIdx.x;
    const int nchunks = (T + GDN_C - 1) / GDN_C;
    float *Sg = S + (size_t)j * GDN_D * GDN_D;
    for (int i = tid; i < GDN_D * GDN_SLICE; i += GDN_THREADS)
        Ss[i] = Sg[(i / GDN_SLICE) * GDN_D + b0 + i % GDN_SLICE];

    const int ty = tid / 8, tx = tid % 8; /* V', O: rows 2ty, 2ty+1; S: rows 4ty..4ty+3; columns 4tx..4tx+3 */
    for (int ci = 0; ci < nchunks; ci++) {
        const int t0 = ci * GDN_C, c = min(GDN_C, T - t0);
        const float *in = scratch + ((size_t)j * nchunks + ci) * GDN_PER;
        __syncthreads(); /* the previous chunk is done with every buffer */
        for (int i = tid; i < GDN_C * GDN_D / 4; i += GDN_THREADS) {
            const int r = i / (GDN_D / 4), a4 = i % (GDN_D / 4);
            *(float4 *)(Ws + r * GDN_WPAD + 4 * a4) = ((const float4 *)(in + GDN_C * GDN_D))[i];
            const size_t off = ((size_t)(t0 + r) * Hk + kh) * GDN_D;
            *(float4 *)(Qs + r * GDN_WPAD + 4 * a4) = r < c ? ((const float4 *)(q + off))[a4] : make_float4(0.f, 0.f, 0.f, 0.f);
        }
        for (int i = tid; i < GDN_C * GDN_C / 4; i += GDN_THREADS)
            ((float4 *)As)[i] = ((const float4 *)(in + 2 * GDN_C * GDN_D))[i];
        if (tid < GDN_C) gam[tid] = in[2 * GDN_C * GDN_D + GDN_C * GDN_C + tid];
        __syncthreads();

        /* V' = U - W S and the inter-chunk part of O, exp(gam_i) (Q S)_i */
        float ws[2][4] = {}, qsum[2][4] = {};
        for (int a = 0; a < GDN_D; a++) {
            const float4 s4 = *(const float4 *)(Ss + a * GDN_SLICE + 4 * tx);
            const float sv[4] = {s4.x, s4.y, s4.z, s4.w};
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const float w = Ws[(2 * ty + r) * GDN_WPAD + a], qq = Qs[(2 * ty + r) * GDN_WPAD + a];
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    ws[r][e] += w * sv[e];
                    qsum[r][e] += qq * sv[e];
                }
            }
        }
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int i = 2 * ty + r;
            const float4 u4 = *(const float4 *)(in + i * GDN_D + b0 + 4 * tx); /* U, from scratch */
            *(float4 *)(Vp + i * GDN_SLICE + 4 * tx) = make_float4(u4.x - ws[r][0], u4.y - ws[r][1], u4.z - ws[r][2], u4.w - ws[r][3]);
        }
        __syncthreads();

        /* O_i = exp(gam_i) (Q S)_i + sum_{j<=i} A_ij V'_j */
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int i = 2 * ty + r;
            if (i >= c) continue;
            const float Gi = expf(gam[i]);
            float acc[4];
#pragma unroll
            for (int e = 0; e < 4; e++) acc[e] = Gi * qsum[r][e];
            for (int jj = 0; jj <= i; jj++) {
                const float aij = As[i * GDN_C + jj];
                const float4 v4 = *(const float4 *)(Vp + jj * GDN_SLICE + 4 * tx);
                acc[0] += aij * v4.x;
                acc[1] += aij * v4.y;
                acc[2] += aij * v4.z;
                acc[3] += aij * v4.w;
            }
            *(float4 *)(o + ((size_t)(t0 + i) * Hv + j) * GDN_D + b0 + 4 * tx) = make_float4(acc[0], acc[1], acc[2], acc[3]);
        }

        /* S <- exp(gam_last) S + sum_j exp(gam_last - gam_j) k_j V'_j^T; the 4 x 4 tile of this thread */
        const float gl = gam[c - 1], Gc = expf(gl);
        float sacc[4][4];
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const float4 s4 = *(const float4 *)(Ss + (4 * ty + r) * GDN_SLICE + 4 * tx);
            sacc[r][0] = Gc * s4.x, sacc[r][1] = Gc * s4.y, sacc[r][2] = Gc * s4.z, sacc[r][3] = Gc * s4.w;
        }
        for (int jj = 0; jj < c; jj++) {
            const float wj = expf(gl - gam[jj]);
            const float4 k4 = __ldg((const float4 *)(k + ((size_t)(t0 + jj) * Hk + kh) * GDN_D + 4 * ty));
            const float4 v4 = *(const float4 *)(Vp + jj * GDN_SLICE + 4 * tx);
            const float kv[4] = {k4.x * wj, k4.y * wj, k4.z * wj, k4.w * wj}, vv[4] = {v4.x, v4.y, v4.z, v4.w};
#pragma unroll
            for (int r = 0; r < 4; r++)
#pragma unroll
                for (int e = 0; e < 4; e++) sacc[r][e] += kv[r] * vv[e];
        }
        __syncthreads(); /* every thread has read the old S (Q S, W S) before it is overwritten */
#pragma unroll
        for (int r = 0; r < 4; r++)
            *(float4 *)(Ss + (4 * ty + r) * GDN_SLICE + 4 * tx) = make_float4(sacc[r][0], sacc[r][1], sacc[r][2], sacc[r][3]);
    }
    __syncthreads();
    for (int i = tid; i < GDN_D * GDN_SLICE; i += GDN_THREADS)
        Sg[(i / GDN_SLICE) * GDN_D + b0 + i % GDN_SLICE] = Ss[i];
}

extern "C" int64_t cuda_gdn_chunk_scratch(int T, int Hv) {
    return (int64_t)Hv * ((T + GDN_C - 1) / GDN_C) * GDN_PER;
}

extern "C" int cuda_gdn_chunk(float *S, const float *q, const float *k, const float *v, const float *g,
                              const float *beta, float *o, int T, int Hk, int Hv, int Dk, int Dv,
                              enum gdn_head_map map, float *scratch, cudaStream_t st) {
    if (!S || !q || !k || !v || !g || !beta || !o || !scratch || T < 1 || Hk < 1 || Hv < 1 || Hv % Hk ||
        Hv > 65535 || ((uintptr_t)S & 15) || ((uintptr_t)q & 15) || ((uintptr_t)k & 15) || ((uintptr_t)o & 15) ||
        ((uintptr_t)scratch & 15))
        return CUDA_KERR_ARGS;
    if (Dk != GDN_D || Dv != GDN_D) return CUDA_KERR_UNSUPPORTED;
    const int grouped = map == GDN_HEADS_GROUPED, nchunks = (T + GDN_C - 1) / GDN_C;
    const int prep_bytes = (int)sizeof(float) * (2 * GDN_C * GDN_PAD + GDN_C * GDN_D + GDN_C * GDN_C + 2 * GDN_C);
    const int scan_bytes = (int)sizeof(float) * (GDN_D * GDN_SLICE + 2 * GDN_C * GDN_WPAD + GDN_C * GDN_SLICE +
                                                 GDN_C * GDN_C + GDN_C);
    if (cudaFuncSetAttribute(gdn_chunk_prep_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, prep_bytes) != cudaSuccess ||
        cudaFuncSetAttribute(gdn_chunk_scan_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, scan_bytes) != cudaSuccess)
        return CUDA_KERR_LAUNCH;
    kl(gdn_chunk_prep_kernel, dim3(nchunks, Hv), GDN_THREADS, prep_bytes, st, q, k, v, g, beta, scratch, T, Hk, Hv,
       grouped);
    kl(gdn_chunk_scan_kernel, dim3(Dv / GDN_SLICE, Hv), GDN_THREADS, scan_bytes, st, q, k, scratch, o, S, T, Hk, Hv,
       grouped);
    return pf_launched();
}
