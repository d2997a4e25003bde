/* attn_decode: split-K (flash-decoding) attention of one query token over an f16 KV cache.
 *
 * k_attn_decode_split, grid (Hkv, n_split), 128 threads = 4 warps: block (kvh, sp) owns the cached
 * positions [sp * chunk, (sp + 1) * chunk) below n_kv (read on the device) and every query head of kv
 * head kvh (G = Hq / Hkv <= 8), so each K/V row is read once for the whole GQA group. Warp w takes
 * positions w, w + 4, ... two at a time; lane l holds dims [l * DL, l * DL + DL) of q (pre-scaled), of the K/V row and
 * of its G output accumulators, with a running max and sum per head (online softmax). The 4 warps merge
 * in shared memory and write, per (head, split), the partial max m, sum l and unnormalised output o[D].
 * k_attn_decode_merge, grid Hq, 4 D threads (four ways over the partials): o = sum_i e^(m_i - M) o_i /
 * sum_i e^(m_i - M) l_i.
 * A split with no visible key writes m = -inf, l = 0 and drops out of the merge. */
#include <cuda_fp16.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/kernels/cuda_common.cuh"

#define ATTN_WARPS 4
#define ATTN_MAX_G 8

/* block (kvh = blockIdx.x, sp) of one sequence's split pass: n_kv cached positions, the query at qpos */
template <int DL>
static __device__ __forceinline__ void attn_split(const float *__restrict__ q, const __half *__restrict__ k,
                                                  const __half *__restrict__ v, int qpos,
                                                  const int32_t *__restrict__ kpos, int n_kv, int sp, int Hkv, int G,
                                                  float scale, int window, int chunk, float *__restrict__ part) {
    constexpr int D = 32 * DL;
    __shared__ float sm[ATTN_WARPS][ATTN_MAX_G], sl[ATTN_WARPS][ATTN_MAX_G];
    __shared__ float so[ATTN_WARPS][ATTN_MAX_G][D];
    const int kvh = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int Hq = Hkv * G;
    float qv[ATTN_MAX_G][DL], acc[ATTN_MAX_G][DL], m[ATTN_MAX_G], l[ATTN_MAX_G];
#pragma unroll
    for (int g = 0; g < ATTN_MAX_G; g++) {
        m[g] = -INFINITY, l[g] = 0.0f;
#pragma unroll
        for (int j = 0; j < DL; j++) {
            acc[g][j] = 0.0f;
            qv[g][j] = g < G ? q[(size_t)(kvh * G + g) * D + lane * DL + j] * scale : 0.0f;
        }
    }
    int s0 = sp * chunk, s1 = min(s0 + chunk, n_kv);
    /* two positions per step (s and s + 4), their K/V loads issued before either is used: a warp's chain of
     * dependent loads is what bounds a short chunk */
    for (int s = s0 + warp; s < s1; s += 2 * ATTN_WARPS) {
        float kf[2][DL], vf[2][DL];
        bool vis[2];
#pragma unroll
        for (int p2 = 0; p2 < 2; p2++) {
            int sp2 = s + p2 * ATTN_WARPS;
            bool in = sp2 < s1;
            int kp = in ? kpos[sp2] : 0;
            vis[p2] = in && kp <= qpos && (window <= 0 || qpos - kp < window);
            size_t off = ((size_t)(in ? sp2 : s) * Hkv + kvh) * D + lane * DL;
#pragma unroll
            for (int j = 0; j < DL; j++) kf[p2][j] = __half2float(k[off + j]), vf[p2][j] = __half2float(v[off + j]);
        }
#pragma unroll
        for (int p2 = 0; p2 < 2; p2++) {
            if (!vis[p2]) continue;
#pragma unroll
            for (int g = 0; g < ATTN_MAX_G; g++) {
                if (g >= G) break;
                float sc = 0.0f;
#pragma unroll
                for (int j = 0; j < DL; j++) sc += qv[g][j] * kf[p2][j];
                sc = warp_sum(sc);
                float mn = fmaxf(m[g], sc), corr = expf(m[g] - mn), p = expf(sc - mn);
                l[g] = l[g] * corr + p;
#pragma unroll
                for (int j = 0; j < DL; j++) acc[g][j] = acc[g][j] * corr + p * vf[p2][j];
                m[g] = mn;
            }
        }
    }
    /* merge the warps */
#pragma unroll
    for (int g = 0; g < ATTN_MAX_G; g++) {
        if (g >= G) break;
        if (lane == 0) sm[warp][g] = m[g], sl[warp][g] = l[g];
#pragma unroll
        for (int j = 0; j < DL; j++) so[warp][g][lane * DL + j] = acc[g][j];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < G * D; i += blockDim.x) {
        int g = i / D, d = i % D;
        float M = -INFINITY;
        for (int w = 0; w < ATTN_WARPS; w++) M = fmaxf(M, sm[w][g]);
        float L = 0.0f, o = 0.0f;
        if (M != -INFINITY)
            for (int w = 0; w < ATTN_WARPS; w++) {
                float f = expf(sm[w][g] - M);
                L += f * sl[w][g];
                o += f * so[w][g][d];
            }
        float *pr = part + ((size_t)sp * Hq + kvh * G + g) * (D + 2);
        pr[2 + d] = o;
        if (d == 0) pr[0] = M, pr[1] = L;
    }
}

/* The same partials by another division of the work (LLM170_CUDA_ATTN=v2: an experiment, to be timed
 * against attn_split on the GPU). The chunk goes in tiles of 32 positions: four threads a position for
 * the scores (a quarter of the dims each: DL 16-byte loads of K in flight a thread, two shuffles), the
 * tile's softmax by warp g % 4 for head g (a lane a position: one max and one sum a tile, where attn_split
 * reduces across the warp for every position and head), then P.V with a thread per 8 dims and a group
 * of positions (16-byte loads of V), the groups summed in order at the end. */
template <int DL>
static __device__ __forceinline__ void attn_split_v2(const float *__restrict__ q, const __half *__restrict__ k,
                                                     const __half *__restrict__ v, int qpos,
                                                     const int32_t *__restrict__ kpos, int n_kv, int sp, int Hkv,
                                                     int G, float scale, int window, int chunk,
                                                     float *__restrict__ part) {
    constexpr int D = 32 * DL, DQ = D / 4, NC = D / 8, NPG = 128 / NC; /* score dims; PV dim chunks, groups */
    __shared__ float qs[ATTN_MAX_G][D], sc[ATTN_MAX_G][32], cr[ATTN_MAX_G], red[NPG][D];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, kvh = blockIdx.x, Hq = Hkv * G;
    for (int i = tid; i < G * D; i += 128) qs[i / D][i % D] = q[(size_t)kvh * G * D + i] * scale;
    const int s0 = sp * chunk, s1 = min(s0 + chunk, n_kv);
    const int lp = tid >> 2, qq = tid & 3;      /* score phase: position lp of the tile, quarter qq of D */
    const int pg = tid / NC, dc = tid % NC;     /* P.V phase: position group pg, dims [8 dc, 8 dc + 8) */
    float M[2] = {-INFINITY, -INFINITY}, L[2] = {0.0f, 0.0f}; /* heads warp and warp + 4 */
    float acc[ATTN_MAX_G][8];
#pragma unroll
    for (int g = 0; g < ATTN_MAX_G; g++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[g][j] = 0.0f;
    __syncthreads();
    for (int t0 = s0; t0 < s1; t0 += 32) {
        const int pos = t0 + lp, np = min(32, s1 - t0);
        const bool in = pos < s1;
        const int kp = in ? kpos[pos] : 0;
        const bool vis = in && kp <= qpos && (window <= 0 || qpos - kp < window);
        float kf[DQ];
        if (in) {
            const uint4 *kr = (const uint4 *)(k + ((size_t)pos * Hkv + kvh) * D + qq * DQ);
#pragma unroll
            for (int c = 0; c < DL; c++) {
                const uint4 w = __ldg(kr + c);
                const __half2 *h = (const __half2 *)&w;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const float2 f = __half22float2(h[j]);
                    kf[8 * c + 2 * j] = f.x, kf[8 * c + 2 * j + 1] = f.y;
                }
            }
        }
#pragma unroll
        for (int g = 0; g < ATTN_MAX_G; g++) {
            if (g >= G) break;
            float s = 0.0f;
            if (in)
#pragma unroll
                for (int j = 0; j < DQ; j++) s += qs[g][qq * DQ + j] * kf[j];
            s += __shfl_xor_sync(0xffffffffu, s, 1);
            s += __shfl_xor_sync(0xffffffffu, s, 2);
            if (qq == 0) sc[g][lp] = vis ? s : -INFINITY;
        }
        __syncthreads();
#pragma unroll
        for (int h = 0; h < 2; h++) { /* the online softmax of heads warp, warp + 4 */
            const int g = warp + 4 * h;
            if (g >= G) break;
            const float x = sc[g][lane], nm = fmaxf(M[h], warp_max(x));
            const float c = M[h] == -INFINITY ? 0.0f : expf(M[h] - nm), p = x == -INFINITY ? 0.0f : expf(x - nm);
            L[h] = L[h] * c + warp_sum(p);
            M[h] = nm;
            sc[g][lane] = p;
            if (lane == 0) cr[g] = c;
        }
        __syncthreads();
        if (pg < NPG) {
#pragma unroll
            for (int g = 0; g < ATTN_MAX_G; g++) {
                if (g >= G) break;
#pragma unroll
                for (int j = 0; j < 8; j++) acc[g][j] *= cr[g];
            }
            for (int i = pg; i < np; i += NPG) {
                const uint4 w = __ldg((const uint4 *)(v + ((size_t)(t0 + i) * Hkv + kvh) * D + 8 * dc));
                const __half2 *h = (const __half2 *)&w;
                float vf[8];
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const float2 f = __half22float2(h[j]);
                    vf[2 * j] = f.x, vf[2 * j + 1] = f.y;
                }
#pragma unroll
                for (int g = 0; g < ATTN_MAX_G; g++) {
                    if (g >= G) break;
                    const float p = sc[g][i];
#pragma unroll
                    for (int j = 0; j < 8; j++) acc[g][j] += p * vf[j];
                }
            }
        }
        __syncthreads(); /* sc and cr are the next tile's */
    }
    /* the position groups' sums, in group order, head by head */
#pragma unroll
    for (int g = 0; g < ATTN_MAX_G; g++) {
        if (g >= G) break;
        if (pg < NPG)
#pragma unroll
            for (int j = 0; j < 8; j++) red[pg][8 * dc + j] = acc[g][j];
        __syncthreads();
        float *pr = part + ((size_t)sp * Hq + kvh * G + g) * (D + 2);
        for (int d = tid; d < D; d += 128) {
            float o = red[0][d];
            for (int i = 1; i < NPG; i++) o += red[i][d];
            pr[2 + d] = o;
        }
        if (warp == (g & 3) && lane == 0) pr[0] = M[g >> 2], pr[1] = L[g >> 2];
        __syncthreads();
    }
}

/* LLM170_CUDA_ATTN=v2: attn_split_v2 for every decode attention of the process (read once) */
static bool attn_v2(void) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("LLM170_CUDA_ATTN");
        v = e && !strcmp(e, "v2");
    }
    return v;
}

template <int DL, bool V2>
__global__ void __launch_bounds__(32 * ATTN_WARPS)
    k_attn_decode_split(const float *__restrict__ q, const __half *__restrict__ k, const __half *__restrict__ v,
                        const int32_t *__restrict__ qpos_p, const int32_t *__restrict__ kpos,
                        const int32_t *__restrict__ n_kv_p, int n_kv_val, int Hkv, int G, float scale, int window,
                        int chunk, float *__restrict__ part) {
    pdl_enter();
    if constexpr (V2)
        attn_split_v2<DL>(q, k, v, *qpos_p, kpos, n_kv_p ? *n_kv_p : n_kv_val, blockIdx.y, Hkv, G, scale, window, chunk,
                          part);
    else
        attn_split<DL>(q, k, v, *qpos_p, kpos, n_kv_p ? *n_kv_p : n_kv_val, blockIdx.y, Hkv, G, scale, window, chunk,
                       part);
}

/* chunks of 32 positions (8 per warp, 4 steps of 2) up to 128 chunks, then longer chunks. Short chunks
 * keep each warp's chain of dependent loads short (S = 1000: 2x faster than chunks of 128 on the H200);
 * more than 128 chunks made the merge, one block per head, the bottleneck (S = 32768: 2.5x slower). */
static __host__ __device__ int n_splits(int S_max) {
    int n = (S_max + 31) / 32;
    return n < 1 ? 1 : n > 128 ? 128 : n;
}

/* sequences of a batched decode step, by value (kernel parameter space: no upload, and a captured graph's
 * update carries new values); CAP of them (1, 8 or CUDA_ATTN_SEQS_MAX: a launch's parameters cost launch
 * time, and a single-stream step would otherwise pass 1.5 KB) */
template <int CAP> struct attn_seqs {
    cuda_attn_seq s[CAP];
};

/* the split pass of sequence blockIdx.z: its own caches, length pos + 1 and chunking (n_splits of that
 * length, as a launch for it alone would choose); grid y covers the longest, shorter ones stop early. The
 * new K/V rows are already stored (k_store_rows_seqs). Partials at part + z * pstride. */
template <int DL, int CAP, bool V2>
__global__ void __launch_bounds__(32 * ATTN_WARPS)
    k_attn_decode_split_seqs(const attn_seqs<CAP> P, const float *__restrict__ q, const int32_t *__restrict__ kpos,
                             int Hkv, int G, float scale, int window, int64_t pstride, float *__restrict__ part) {
    pdl_enter();
    const cuda_attn_seq a = P.s[blockIdx.z];
    const int S = a.pos + 1, ns = n_splits(S), chunk = (S + ns - 1) / ns;
    if ((int)blockIdx.y >= ns) return;
    const int D = 32 * DL;
    if constexpr (V2)
        attn_split_v2<DL>(q + (size_t)a.row * Hkv * G * D, (const __half *)a.k, (const __half *)a.v, a.pos, kpos, S,
                          blockIdx.y, Hkv, G, scale, window, chunk, part + blockIdx.z * pstride);
    else
        attn_split<DL>(q + (size_t)a.row * Hkv * G * D, (const __half *)a.k, (const __half *)a.v, a.pos, kpos, S,
                       blockIdx.y, Hkv, G, scale, window, chunk, part + blockIdx.z * pstride);
}

/* the new key and value rows of each sequence (rows s.row of kn / vn, width values) as f16 at slot s.pos
 * of its caches: grid (x: 2 * width values, y: sequence) */
template <int CAP>
__global__ void k_store_rows_seqs(const attn_seqs<CAP> P, const float *__restrict__ kn, const float *__restrict__ vn,
                                  int width) {
    pdl_enter();
    const cuda_attn_seq a = P.s[blockIdx.y];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 2 * width; i += gridDim.x * blockDim.x) {
        const bool isk = i < width;
        const int j = isk ? i : i - width;
        uint16_t *dst = (isk ? a.k : a.v) + (size_t)a.pos * width + j;
        *(__half *)dst = __float2half_rn((isk ? kn : vn)[(size_t)a.row * width + j]);
    }
}

/* the merge of head h over n_split partials, by blockDim.x = ATTN_MERGE_WAYS * D threads: thread (way, d)
 * takes the partials i = way, way + ATTN_MERGE_WAYS, ... (a quarter of the chain of loads each: at 128
 * partials, one thread a dim walked 256 of them), the ways combined in shared memory in way order */
#define ATTN_MERGE_WAYS 4
static __device__ __forceinline__ void attn_merge(const float *__restrict__ part, float *__restrict__ out, int h,
                                                  int Hq, int D, int n_split) {
    __shared__ float sM[ATTN_MERGE_WAYS], sL[ATTN_MERGE_WAYS], so[ATTN_MERGE_WAYS][256];
    const int way = threadIdx.x / D, d = threadIdx.x % D;
    float m = -INFINITY;
#pragma unroll 4
    for (int i = way; i < n_split; i += ATTN_MERGE_WAYS) m = fmaxf(m, part[((size_t)i * Hq + h) * (D + 2)]);
    if (d == 0) sM[way] = m;
    __syncthreads();
    float M = sM[0];
#pragma unroll
    for (int w = 1; w < ATTN_MERGE_WAYS; w++) M = fmaxf(M, sM[w]);
    float L = 0.0f, o = 0.0f;
    if (M != -INFINITY)
#pragma unroll 4
        for (int i = way; i < n_split; i += ATTN_MERGE_WAYS) {
            const float *pr = part + ((size_t)i * Hq + h) * (D + 2);
            const float f = expf(pr[0] - M);
            L += f * pr[1];
            o += f * pr[2 + d];
        }
    if (d == 0) sL[way] = L;
    so[way][d] = o;
    __syncthreads();
    if (way == 0) {
        for (int w = 1; w < ATTN_MERGE_WAYS; w++) L += sL[w], o += so[w][d];
        out[(size_t)h * D + d] = L > 0.0f ? o / L : 0.0f;
    }
}

__global__ void k_attn_decode_merge(const float *__restrict__ part, float *__restrict__ out, int Hq, int D,
                                    int n_split) {
    pdl_enter();
    attn_merge(part, out, blockIdx.x, Hq, D, n_split);
}

/* grid (Hq, sequence) */
template <int CAP>
__global__ void k_attn_decode_merge_seqs(const attn_seqs<CAP> P, const float *__restrict__ part, float *__restrict__ out,
                                         int Hq, int D, int64_t pstride) {
    pdl_enter();
    const cuda_attn_seq a = P.s[blockIdx.y];
    attn_merge(part + blockIdx.y * pstride, out + (size_t)a.row * Hq * D, blockIdx.x, Hq, D, n_splits(a.pos + 1));
}

extern "C" int64_t cuda_attn_decode_scratch(int S_max, int Hq, int D) {
    return (int64_t)n_splits(S_max) * Hq * (D + 2);
}

extern "C" int cuda_attn_decode(const float *q, const uint16_t *k, const uint16_t *v, float *out,
                                const int32_t *qpos, const int32_t *kpos, const int32_t *n_kv, int S_max, int Hq,
                                int Hkv, int D, float scale, int window, float *scratch, cudaStream_t s) {
    if (!q || !k || !v || !out || !qpos || !kpos || !scratch || S_max < 1 || Hkv < 1 || Hq % Hkv ||
        Hq / Hkv > ATTN_MAX_G || D % 32 || D < 32 || D > 256 || window < 0)
        return CUDA_KERR_ARGS;
    int ns = n_splits(S_max), chunk = (S_max + ns - 1) / ns, G = Hq / Hkv;
    dim3 grid(Hkv, ns);
    const __half *kh = (const __half *)k, *vh = (const __half *)v;
    switch (D / 32) {
#define ATTN_CASE(DL)                                                                                          \
    case DL:                                                                                                   \
        if (attn_v2())                                                                                         \
            kl(k_attn_decode_split<DL, true>, grid, 32 * ATTN_WARPS, 0, s, q, kh, vh, qpos, kpos, n_kv, S_max,    \
               Hkv, G, scale, window, chunk, scratch);                                                            \
        else                                                                                                   \
            kl(k_attn_decode_split<DL, false>, grid, 32 * ATTN_WARPS, 0, s, q, kh, vh, qpos, kpos, n_kv, S_max,   \
               Hkv, G, scale, window, chunk, scratch);                                                            \
        break;
        ATTN_CASE(1) ATTN_CASE(2) ATTN_CASE(3) ATTN_CASE(4) ATTN_CASE(5) ATTN_CASE(6) ATTN_CASE(7) ATTN_CASE(8)
#undef ATTN_CASE
    }
    int rc = launch_status();
    if (rc) return rc;
    kl(k_attn_decode_merge, Hq, ATTN_MERGE_WAYS * D, 0, s, scratch, out, Hq, D, ns);
    return launch_status();
}

template <int CAP>
static int attn_seqs_run(const cuda_attn_seq *seqs, int n, const float *q, const float *kn, const float *vn, float *out,
                         const int32_t *kpos, int Hq, int Hkv, int D, float scale, int window, float *scratch,
                         int64_t scratch_n, cudaStream_t s) {
    attn_seqs<CAP> P;
    int S_max = 1;
    for (int i = 0; i < n; i++) {
        if (!seqs[i].k || !seqs[i].v || seqs[i].pos < 0 || seqs[i].row < 0) return CUDA_KERR_ARGS;
        P.s[i] = seqs[i];
        S_max = seqs[i].pos + 1 > S_max ? seqs[i].pos + 1 : S_max;
    }
    const int64_t pstride = cuda_attn_decode_scratch(S_max, Hq, D);
    if (pstride * n > scratch_n) return CUDA_KERR_ARGS;
    const int width = Hkv * D, G = Hq / Hkv;
    kl(k_store_rows_seqs<CAP>, dim3((unsigned)((2 * width + 255) / 256), (unsigned)n), 256, 0, s, P, kn, vn, width);
    int rc = launch_status();
    if (rc) return rc;
    dim3 grid(Hkv, n_splits(S_max), n);
    switch (D / 32) {
#define ATTN_CASE(DL)                                                                                          \
    case DL:                                                                                                   \
        if (attn_v2())                                                                                         \
            kl(k_attn_decode_split_seqs<DL, CAP, true>, grid, 32 * ATTN_WARPS, 0, s, P, q, kpos, Hkv, G, scale,    \
               window, pstride, scratch);                                                                          \
        else                                                                                                   \
            kl(k_attn_decode_split_seqs<DL, CAP, false>, grid, 32 * ATTN_WARPS, 0, s, P, q, kpos, Hkv, G, scale,   \
               window, pstride, scratch);                                                                          \
        break;
        ATTN_CASE(1) ATTN_CASE(2) ATTN_CASE(3) ATTN_CASE(4) ATTN_CASE(5) ATTN_CASE(6) ATTN_CASE(7) ATTN_CASE(8)
#undef ATTN_CASE
    }
    if ((rc = launch_status())) return rc;
    kl(k_attn_decode_merge_seqs<CAP>, dim3(Hq, n), ATTN_MERGE_WAYS * D, 0, s, P, scratch, out, Hq, D, pstride);
    return launch_status();
}

extern "C" int cuda_attn_decode_seqs(const cuda_attn_seq *seqs, int n, const float *q, const float *kn, const float *vn,
                                     float *out, const int32_t *kpos, int Hq, int Hkv, int D, float scale, int window,
                                     float *scratch, int64_t scratch_n, cudaStream_t s) {
    if (!seqs || n < 1 || n > CUDA_ATTN_SEQS_MAX || !q || !kn || !vn || !out || !kpos || !scratch || Hkv < 1 ||
        Hq % Hkv || Hq / Hkv > ATTN_MAX_G || D % 32 || D < 32 || D > 256 || window < 0)
        return CUDA_KERR_ARGS;
    if (n == 1) return attn_seqs_run<1>(seqs, n, q, kn, vn, out, kpos, Hq, Hkv, D, scale, window, scratch, scratch_n, s);
    if (n <= 8) return attn_seqs_run<8>(seqs, n, q, kn, vn, out, kpos, Hq, Hkv, D, scale, window, scratch, scratch_n, s);
    return attn_seqs_run<CUDA_ATTN_SEQS_MAX>(seqs, n, q, kn, vn, out, kpos, Hq, Hkv, D, scale, window, scratch,
                                             scratch_n, s);
}
