/* select: the decisions of a decode step made on the device, so no logits travel to the host: the MoE
 * router (softmax or sigmoid over E experts, top-K, renormalisation) and the greedy argmax over the
 * vocabulary. Both break ties towards the lower id, as the CPU does (qwen35 moe_block, sampler). */
#include <math.h>
#include <stdint.h>

#include "backends/cuda/kernels/cuda_common.cuh"

#define ROUTE_MAX_E 1024

/* (value, id) pairs: the larger value wins, equal values go to the lower id */
static __device__ __forceinline__ void best_of(float &v, int &id, float v2, int id2) {
    if (v2 > v || (v2 == v && id2 < id) || id < 0) v = v2, id = id2;
}

/* one warp per token, 4 a block: lane l holds experts l, l + 32, ... (PER registers, PER >= E / 32: a power
 * of two, so E = 256 walks 8 a lane, not ROUTE_MAX_E / 32; the slots past E took no part in any sum or
 * comparison, so every PER gives the same bits); the softmax by warp reductions, then K rounds of a warp
 * arg-max over the untaken. No block barrier: as 256 threads with two barriers and a serial step a round, a
 * decode step's router (E = 256, K = 8) took ~12 us on the H200. Every lane ends a round with the same
 * (value, id): best_of is a total order. */
template <int ROUTE_PER_LANE>
__global__ void __launch_bounds__(128) k_moe_route(const float *__restrict__ logits, int32_t *__restrict__ ids,
                                                   float *__restrict__ w, int T, int E, int K, int gating, int renorm) {
    pdl_enter();
    const int lane = threadIdx.x & 31, t = blockIdx.x * 4 + (threadIdx.x >> 5);
    if (t >= T) return; /* uniform over the warp */
    const float *l = logits + (size_t)t * E;
    float p[ROUTE_PER_LANE]; /* -1: not an expert, or taken */
    if (gating == CUDA_MOE_SOFTMAX) {
        float mx = -INFINITY, sum = 0.0f;
#pragma unroll
        for (int j = 0; j < ROUTE_PER_LANE; j++)
            if (lane + 32 * j < E) mx = fmaxf(mx, l[lane + 32 * j]);
        mx = warp_max(mx);
#pragma unroll
        for (int j = 0; j < ROUTE_PER_LANE; j++) {
            p[j] = lane + 32 * j < E ? expf(l[lane + 32 * j] - mx) : -1.0f;
            if (p[j] >= 0.0f) sum += p[j];
        }
        sum = warp_sum(sum);
#pragma unroll
        for (int j = 0; j < ROUTE_PER_LANE; j++)
            if (p[j] >= 0.0f) p[j] = p[j] / sum;
    } else {
#pragma unroll
        for (int j = 0; j < ROUTE_PER_LANE; j++)
            p[j] = lane + 32 * j < E ? 1.0f / (1.0f + expf(-l[lane + 32 * j])) : -1.0f;
    }
    float tot = 0.0f;
    for (int r = 0; r < K; r++) {
        float v = -INFINITY;
        int id = -1;
#pragma unroll
        for (int j = 0; j < ROUTE_PER_LANE; j++)
            if (p[j] >= 0.0f) best_of(v, id, p[j], lane + 32 * j);
        for (int o = 16; o > 0; o >>= 1) {
            const float v2 = __shfl_xor_sync(0xffffffffu, v, o);
            const int id2 = __shfl_xor_sync(0xffffffffu, id, o);
            if (id2 >= 0) best_of(v, id, v2, id2);
        }
        if (lane == 0) ids[(size_t)t * K + r] = id, w[(size_t)t * K + r] = v;
        tot += v;
#pragma unroll
        for (int j = 0; j < ROUTE_PER_LANE; j++)
            if (lane + 32 * j == id) p[j] = -1.0f;
    }
    if (lane == 0 && renorm)
        for (int r = 0; r < K; r++) w[(size_t)t * K + r] /= tot;
}

/* argmax as a 64-bit atomic max of (orderable value bits << 32 | ~id): the larger value wins, then the
 * lower id. Grid (blocks, T), 256 threads; k_argmax_final turns the word into the id and clears it. */
static __device__ __forceinline__ unsigned long long argmax_key(float v, int i) {
    unsigned u = __float_as_uint(v);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    if (v != v) u = 0; /* NaN never wins */
    return ((unsigned long long)u << 32) | (0xffffffffu - (unsigned)i);
}

__global__ void __launch_bounds__(256) k_argmax_partial(const float *__restrict__ x, unsigned long long *best, int V) {
    pdl_enter();
    const int t = blockIdx.y, lane = threadIdx.x & 31;
    const float *xr = x + (size_t)t * V;
    unsigned long long k = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < V; i += gridDim.x * blockDim.x) {
        unsigned long long c = argmax_key(xr[i], i);
        k = c > k ? c : k;
    }
    for (int o = 16; o > 0; o >>= 1) {
        unsigned long long c = __shfl_xor_sync(0xffffffffu, k, o);
        k = c > k ? c : k;
    }
    if (lane == 0 && k) atomicMax(best + t, k);
}

__global__ void k_argmax_final(unsigned long long *best, int32_t *ids, int T) {
    pdl_enter();
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    ids[t] = (int32_t)(0xffffffffu - (unsigned)(best[t] & 0xffffffffu));
    best[t] = 0;
}

extern "C" int cuda_moe_route(const float *logits, int32_t *ids, float *w, int T, int E, int K,
                              enum cuda_moe_gating gating, int renorm, cudaStream_t s) {
    if (!logits || !ids || !w || T < 1 || E < 1 || E > ROUTE_MAX_E || K < 1 || K > 32 || K > E ||
        (gating != CUDA_MOE_SOFTMAX && gating != CUDA_MOE_SIGMOID))
        return CUDA_KERR_ARGS;
    auto k = E <= 64 ? k_moe_route<2> : E <= 128 ? k_moe_route<4> : E <= 256 ? k_moe_route<8>
           : E <= 512 ? k_moe_route<16> : k_moe_route<ROUTE_MAX_E / 32>;
    kl(k, (T + 3) / 4, 128, 0, s, logits, ids, w, T, E, K, (int)gating, renorm);
    return launch_status();
}

extern "C" int cuda_argmax(const float *x, int32_t *ids, unsigned long long *scratch, int T, int V, cudaStream_t s) {
    if (!x || !ids || !scratch || T < 1 || V < 1 || T > 65535) return CUDA_KERR_ARGS;
    int blocks = (V + 2047) / 2048;
    if (blocks > 128) blocks = 128;
    kl(k_argmax_partial, dim3(blocks, T), 256, 0, s, x, scratch, V);
    int rc = launch_status();
    if (rc) return rc;
    kl(k_argmax_final, (T + 127) / 128, 128, 0, s, scratch, ids, T);
    return launch_status();
}
