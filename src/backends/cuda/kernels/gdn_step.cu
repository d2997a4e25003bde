/* gdn_step: one decode token of a Gated DeltaNet layer, from the projections to the gated norm, in one
 * kernel (see cuda_gdn_step in kernels.h for the math and the CPU ops it replaces).
 *
 * Grid (Hv, 4): block (j, cb) owns columns [32 cb, 32 cb + 32) of value head j's state (4 blocks per head
 * so that 128-192 blocks stream the 8-12 MiB of state, not 32-48), 256 threads. Each block recomputes the
 * conv step of the channels it reads (q and k of key head hk = gdn_key_head(j): 256; v: its 32), so
 * blocks never wait on each other; the conv state is read from conv_in and written to conv_out by one
 * block per channel (v by its column block, q/k by column block 0 of the first value head of the key head).
 * Then the l2 norms and gates (block reductions), and the state: thread (c, rg) = (lane, warp) owns
 * column 32 cb + c, rows [16 rg, 16 rg + 16), in 16 registers (a warp reads 128 contiguous bytes a row):
 *   S *= e^g;  m = sum_a S_a k_a;  u = beta (v - m);  S_a += k_a u;  o = sum_a S_a q_a
 * (the 8 row groups' partial sums meet in shared memory), S written back once. The pre-norm o goes to
 * o[]; the last of a head's 4 blocks to finish (a counter per head in sync[], reset by that block) applies
 * o = rms_norm(o) * norm_w * silu(z) over the whole head. */
#include <math.h>

#include "backends/cuda/kernels/cuda_common.cuh"

#define GDN_D 128

static __device__ __forceinline__ float gdn_silu(float x) { return x / (1.0f + expf(-x)); }

#define GDN_CB 4  /* column blocks per head */
#define GDN_CW 32 /* columns per block */

__global__ void __launch_bounds__(256) k_gdn_step(cuda_gdn_args a) {
    pdl_enter();
    __shared__ float sq[GDN_D], sk[GDN_D], sv[GDN_CW], red[8][GDN_CW], sh[32];
    __shared__ bool last;
    const int j = blockIdx.x, cb = blockIdx.y, tid = threadIdx.x, Hk = a.Hk, Hv = a.Hv, Kc = a.Kc;
    const int hk = a.map == GDN_HEADS_TILED ? j % Hk : j / (Hv / Hk); /* as gdn_key_head (ops_ref.h) */
    const int first_j = a.map == GDN_HEADS_TILED ? hk : hk * (Hv / Hk); /* first value head of key head hk */
    const int dc = 2 * Hk * GDN_D + Hv * GDN_D;
    /* the state slice first: its loads depend on nothing and overlap the conv step and norms below */
    const int c = tid & 31, rg = tid >> 5, b = cb * GDN_CW + c, r0 = rg * 16;
    float *Sj = a.S + (size_t)j * GDN_D * GDN_D;
    float s[16];
#pragma unroll
    for (int i = 0; i < 16; i++) s[i] = Sj[(size_t)(r0 + i) * GDN_D + b];
    /* conv step + SiLU: 0..127 q, 128..255 k, 256..287 this block's v columns */
    for (int i = tid; i < 2 * GDN_D + GDN_CW; i += blockDim.x) {
        int ch = i < GDN_D ? hk * GDN_D + i
               : i < 2 * GDN_D ? Hk * GDN_D + hk * GDN_D + (i - GDN_D)
                               : 2 * Hk * GDN_D + j * GDN_D + cb * GDN_CW + (i - 2 * GDN_D);
        const float *w = a.conv_w + (size_t)ch * Kc;
        float x = a.qkv[ch], acc = 0.0f;
        for (int r = 0; r < Kc - 1; r++) acc += w[r] * a.conv_in[(size_t)r * dc + ch];
        acc += w[Kc - 1] * x;
        float y = gdn_silu(acc);
        if (i < GDN_D) sq[i] = y;
        else if (i < 2 * GDN_D) sk[i - GDN_D] = y;
        else sv[i - 2 * GDN_D] = y;
        if (i >= 2 * GDN_D || (j == first_j && cb == 0)) {
            for (int r = 0; r < Kc - 2; r++) a.conv_out[(size_t)r * dc + ch] = a.conv_in[(size_t)(r + 1) * dc + ch];
            a.conv_out[(size_t)(Kc - 2) * dc + ch] = x;
        }
    }
    __syncthreads();
    /* l2 norms of q (times Dk^-1/2) and k */
    float qq = tid < GDN_D ? sq[tid] * sq[tid] : 0.0f, kk = tid < GDN_D ? sk[tid] * sk[tid] : 0.0f;
    qq = block_sum(qq, sh);
    kk = block_sum(kk, sh);
    float iq = rsqrtf((float)GDN_D) / sqrtf(qq + a.eps), ik = 1.0f / sqrtf(kk + a.eps);
    __syncthreads();
    if (tid < GDN_D) sq[tid] *= iq, sk[tid] *= ik;
    /* gates */
    float al = a.alpha[j] + a.dt_bias[j];
    float sp = al > 20.0f ? al : log1pf(expf(al));
    float decay = expf(a.ssm_a[j] * sp), beta = 1.0f / (1.0f + expf(-a.beta_raw[j]));
    __syncthreads();
    /* the delta rule on column b, rows [r0, r0 + 16) */
    float mp = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; i++) {
        s[i] *= decay;
        mp += s[i] * sk[r0 + i];
    }
    red[rg][c] = mp;
    __syncthreads();
    float m = 0.0f;
#pragma unroll
    for (int g = 0; g < 8; g++) m += red[g][c];
    float u = beta * (sv[c] - m);
    float op = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; i++) {
        s[i] += sk[r0 + i] * u;
        Sj[(size_t)(r0 + i) * GDN_D + b] = s[i];
        op += s[i] * sq[r0 + i];
    }
    __syncthreads();
    red[rg][c] = op;
    __syncthreads();
    if (rg == 0) {
        float o = 0.0f;
#pragma unroll
        for (int g = 0; g < 8; g++) o += red[g][c];
        a.o[(size_t)j * GDN_D + b] = o;
        __threadfence(); /* the pre-norm o visible before the count */
    }
    __syncthreads();
    if (tid == 0) last = atomicAdd(a.sync + j, 1u) == GDN_CB - 1;
    __syncthreads();
    if (!last) return;
    /* the last block of head j: gated rms norm over the whole head (o read past L1: other SMs wrote it) */
    __threadfence();
    float o = tid < GDN_D ? __ldcg(a.o + (size_t)j * GDN_D + tid) : 0.0f;
    float oo = block_sum(o * o, sh);
    if (tid < GDN_D) {
        float inv = 1.0f / sqrtf(oo / (float)GDN_D + a.eps);
        a.o[(size_t)j * GDN_D + tid] = o * inv * a.norm_w[tid] * gdn_silu(a.z[(size_t)j * GDN_D + tid]);
    }
    if (tid == 0) a.sync[j] = 0;
}

extern "C" int cuda_gdn_step(const cuda_gdn_args *a, cudaStream_t s) {
    if (!a || !a->qkv || !a->conv_in || !a->conv_out || a->conv_in == a->conv_out || !a->conv_w || !a->alpha ||
        !a->beta_raw || !a->ssm_a || !a->dt_bias || !a->z || !a->norm_w || !a->S || !a->o || !a->sync || a->Hk < 1 ||
        a->Hv < 1 || a->Hv % a->Hk || a->Kc < 2 || !(a->eps >= 0.0f))
        return CUDA_KERR_ARGS;
    if (a->Dk != GDN_D || a->Dv != GDN_D) return CUDA_KERR_UNSUPPORTED;
    kl(k_gdn_step, dim3(a->Hv, GDN_CB), 256, 0, s, *a);
    return launch_status();
}
