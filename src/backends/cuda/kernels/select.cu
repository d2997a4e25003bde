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

/* grid T, 256 threads: p[E] in shared memory, then K rounds of a block arg-max over the untaken */
__global__ void __launch_bounds__(256) k_moe_route(const float *__restrict__ logits, int32_t *__restrict__ ids,
                                                   float *__restrict__ w, int E, int K, int gating, int renorm) {
    __shared__ float p[ROUTE_MAX_E], sh[32];
    __shared__ float wv[32];
    __shared__ int wi[32];
    const int t = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const float *l = logits + (size_t)t * E;
    if (gating == CUDA_MOE_SOFTMAX) {
        float mx = -INFINITY;
        for (int i = threadIdx.x; i < E; i += blockDim.x) mx = fmaxf(mx, l[i]);
        mx = warp_max(mx);
        if (lane == 0) sh[warp] = mx;
        __syncthreads();
        mx = lane < nw ? sh[lane] : -INFINITY;
        mx = warp_max(mx);
        float sum = 0.0f;
        for (int i = threadIdx.x; i < E; i += blockDim.x) sum += (p[i] = expf(l[i] - mx));
        sum = block_sum(sum, sh);
        for (int i = threadIdx.x; i < E; i += blockDim.x) p[i] = p[i] / sum;
    } else {
        for (int i = threadIdx.x; i < E; i += blockDim.x) p[i] = 1.0f / (1.0f + expf(-l[i]));
    }
    __syncthreads();
    float tot = 0.0f;
    for (int r = 0; r < K; r++) {
        float v = -INFINITY;
        int id = -1;
        for (int i = threadIdx.x; i < E; i += blockDim.x)
            if (p[i] >= 0.0f) best_of(v, id, p[i], i); /* taken experts are marked -1 */
        for (int o = 16; o > 0; o >>= 1) {
            float v2 = __shfl_xor_sync(0xffffffffu, v, o);
            int id2 = __shfl_xor_sync(0xffffffffu, id, o);
            if (id2 >= 0) best_of(v, id, v2, id2);
        }
        if (lane == 0) wv[warp] = v, wi[warp] = id;
        __syncthreads();
        if (threadIdx.x == 0) {
            float bv = wv[0];
            int bi = wi[0];
            for (int i = 1; i < nw; i++)
                if (wi[i] >= 0) best_of(bv, bi, wv[i], wi[i]);
            ids[(size_t)t * K + r] = bi;
            w[(size_t)t * K + r] = bv;
            tot += bv;
            p[bi] = -1.0f;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0 && renorm)
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
    k_moe_route<<<T, 256, 0, s>>>(logits, ids, w, E, K, (int)gating, renorm);
    return launch_status();
}

extern "C" int cuda_argmax(const float *x, int32_t *ids, unsigned long long *scratch, int T, int V, cudaStream_t s) {
    if (!x || !ids || !scratch || T < 1 || V < 1 || T > 65535) return CUDA_KERR_ARGS;
    int blocks = (V + 2047) / 2048;
    if (blocks > 128) blocks = 128;
    k_argmax_partial<<<dim3(blocks, T), 256, 0, s>>>(x, scratch, V);
    int rc = launch_status();
    if (rc) return rc;
    k_argmax_final<<<(T + 127) / 128, 128, 0, s>>>(scratch, ids, T);
    return launch_status();
}
