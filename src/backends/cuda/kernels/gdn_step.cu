/* gdn_step: one decode token of a Gated DeltaNet layer for each of n sequences, from the projections to the
 * gated norm, in one kernel (see cuda_gdn_step in kernels.h for the math and the CPU ops it replaces).
 *
 * Grid (Hv, CB, n): block (j, cb, i) owns columns [CW cb, CW cb + CW) of value head j's state of sequence
 * i (CB = 4 column blocks of CW = 32 a head from 32 value heads up, 8 of 16 below: >= 128 blocks a
 * sequence stream the 8-12 MiB of state, not 32-48), 256 threads. Each block recomputes the conv step of
 * the channels it reads (q and k of key head hk = gdn_key_head(j): 256; v: its CW), so blocks never wait on
 * each other. The conv state is updated in place,
 * each channel by one block after every block that reads it has read it: a v channel by its only reader;
 * the q / k channels of key head hk by the last of the (Hv/Hk) * CB blocks that read them to finish (a
 * counter per key head in sync[], reset by that block).
 * Then the l2 norms and gates (block reductions), and the state: thread (c, rg) = (tid % CW, tid / CW) owns
 * column CW cb + c, rows [RPT rg, RPT rg + RPT) (RPT = 16 or 8), in registers:
 *   S *= e^g;  m = sum_a S_a k_a;  u = beta (v - m);  S_a += k_a u;  o = sum_a S_a q_a
 * (the RG = 256 / CW row groups' partial sums meet in shared memory), S written back once. The pre-norm o goes to
 * o[]; the last of a head's CB blocks to finish (a counter per head in sync[], reset by that block) applies
 * o = rms_norm(o) * norm_w * silu(z) over the whole head, and writes the head's 4 q8_1 units when asked. */
#include <math.h>
#include <stdint.h>

#include "backends/cuda/kernels/cuda_common.cuh"

#define GDN_D 128

static __device__ __forceinline__ float gdn_silu(float x) { return x / (1.0f + expf(-x)); }

/* sums of x and of y over the block (every thread gets both); sh: 32 float2 of shared memory, used once */
static __device__ __forceinline__ float2 block_sum2(float x, float y, float2 *sh) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    x = warp_sum(x), y = warp_sum(y);
    if (lane == 0) sh[w] = make_float2(x, y);
    __syncthreads();
    float2 v = lane < nw ? sh[lane] : make_float2(0.0f, 0.0f);
    return make_float2(warp_sum(v.x), warp_sum(v.y));
}

/* CB column blocks per head (gdn_cb): CW columns a block, RG row groups of RPT rows */
template <int CB>
__global__ void __launch_bounds__(256) k_gdn_step(const cuda_gdn_args a) {
    pdl_enter();
    constexpr int CW = GDN_D / CB, RG = 256 / CW, RPT = GDN_D / RG;
    __shared__ float sq[GDN_D], sk[GDN_D], sv[CW], red[RG][CW], sh[32];
    __shared__ float2 sh2[32];
    __shared__ bool last, lastk;
    const int j = blockIdx.x, cb = blockIdx.y, sn = blockIdx.z, tid = threadIdx.x, Hk = a.Hk, Hv = a.Hv, Kc = a.Kc;
    const int hk = a.map == GDN_HEADS_TILED ? j % Hk : j / (Hv / Hk); /* as gdn_key_head (ops_ref.h) */
    const int dc = 2 * Hk * GDN_D + Hv * GDN_D;
    const float *qkv = a.qkv + (size_t)sn * dc;
    float *conv = a.seq[sn].conv;
    unsigned int *sync = a.sync + (size_t)sn * (Hv + Hk); /* [Hv] per value head, then [Hk] per key head */
    const size_t jh = (size_t)sn * Hv + j;
    /* every load that depends on nothing first, so they overlap: the state slice, the gate inputs, and
     * what the head's last block needs for the gated norm */
    const int c = tid % CW, rg = tid / CW, b = cb * CW + c, r0 = rg * RPT;
    float *Sj = a.seq[sn].S + (size_t)j * GDN_D * GDN_D;
    float s[RPT];
#pragma unroll
    for (int i = 0; i < RPT; i++) s[i] = Sj[(size_t)(r0 + i) * GDN_D + b];
    const float al = a.alpha[jh] + a.dt_bias[j], sa = a.ssm_a[j], br = a.beta_raw[jh];
    const float zt = tid < GDN_D ? a.z[jh * GDN_D + tid] : 0.0f, nwt = tid < GDN_D ? a.norm_w[tid] : 0.0f;
    /* conv step + SiLU: 0..127 q, 128..255 k, then this block's CW v columns */
    for (int i = tid; i < 2 * GDN_D + CW; i += blockDim.x) {
        int ch = i < GDN_D ? hk * GDN_D + i
               : i < 2 * GDN_D ? Hk * GDN_D + hk * GDN_D + (i - GDN_D)
                               : 2 * Hk * GDN_D + j * GDN_D + cb * CW + (i - 2 * GDN_D);
        const float *w = a.conv_w + (size_t)ch * Kc;
        float x = qkv[ch], acc = 0.0f;
        for (int r = 0; r < Kc - 1; r++) acc += w[r] * conv[(size_t)r * dc + ch];
        acc += w[Kc - 1] * x;
        float y = gdn_silu(acc);
        if (i < GDN_D) sq[i] = y;
        else if (i < 2 * GDN_D) sk[i - GDN_D] = y;
        else {
            sv[i - 2 * GDN_D] = y;
            /* this block is the only reader of its v channels: shift them now (same thread, after its reads) */
            for (int r = 0; r < Kc - 2; r++) conv[(size_t)r * dc + ch] = conv[(size_t)(r + 1) * dc + ch];
            conv[(size_t)(Kc - 2) * dc + ch] = x;
        }
    }
    __syncthreads();
    /* l2 norms of q (times Dk^-1/2) and k */
    float2 qk2 = block_sum2(tid < GDN_D ? sq[tid] * sq[tid] : 0.0f, tid < GDN_D ? sk[tid] * sk[tid] : 0.0f, sh2);
    float iq = rsqrtf((float)GDN_D) / sqrtf(qk2.x + a.eps), ik = 1.0f / sqrtf(qk2.y + a.eps);
    __syncthreads();
    if (tid < GDN_D) sq[tid] *= iq, sk[tid] *= ik;
    /* gates */
    float sp = al > 20.0f ? al : log1pf(expf(al));
    float decay = expf(sa * sp), beta = 1.0f / (1.0f + expf(-br));
    __syncthreads();
    /* the delta rule on column b, rows [r0, r0 + RPT) */
    float mp = 0.0f;
#pragma unroll
    for (int i = 0; i < RPT; i++) {
        s[i] *= decay;
        mp += s[i] * sk[r0 + i];
    }
    red[rg][c] = mp;
    __syncthreads();
    float m = 0.0f;
#pragma unroll
    for (int g = 0; g < RG; g++) m += red[g][c];
    float u = beta * (sv[c] - m);
    float op = 0.0f;
#pragma unroll
    for (int i = 0; i < RPT; i++) {
        s[i] += sk[r0 + i] * u;
        Sj[(size_t)(r0 + i) * GDN_D + b] = s[i];
        op += s[i] * sq[r0 + i];
    }
    __syncthreads();
    red[rg][c] = op;
    __syncthreads();
    float *oj = a.o + jh * GDN_D;
    if (rg == 0) {
        float o = 0.0f;
#pragma unroll
        for (int g = 0; g < RG; g++) o += red[g][c];
        oj[b] = o;
        __threadfence(); /* the pre-norm o visible before the count */
    }
    __syncthreads();
    /* two counts at once: this head's column blocks (the last applies the gated norm) and the readers of
     * key head hk's q / k channels (all of which have read them by now: the last shifts them) */
    if (tid == 0) last = atomicAdd(sync + j, 1u) == CB - 1;
    if (tid == 32) lastk = atomicAdd(sync + Hv + hk, 1u) == (unsigned)(Hv / Hk * CB) - 1;
    __syncthreads();
    if (lastk) {
        for (int i = tid; i < 2 * GDN_D; i += blockDim.x) {
            int ch = i < GDN_D ? hk * GDN_D + i : Hk * GDN_D + hk * GDN_D + (i - GDN_D);
            for (int r = 0; r < Kc - 2; r++) conv[(size_t)r * dc + ch] = conv[(size_t)(r + 1) * dc + ch];
            conv[(size_t)(Kc - 2) * dc + ch] = qkv[ch];
        }
        if (tid == 0) sync[Hv + hk] = 0;
    }
    if (!last) return;
    /* the last block of head j: gated rms norm over the whole head (o read past L1: other SMs wrote it) */
    __threadfence();
    float o = tid < GDN_D ? __ldcg(oj + tid) : 0.0f;
    float oo = block_sum(o * o, sh);
    if (tid < GDN_D) {
        float inv = 1.0f / sqrtf(oo / (float)GDN_D + a.eps);
        o = o * inv * nwt * gdn_silu(zt);
        oj[tid] = o;
        if (a.xq) { /* warp w < 4 holds unit w of the head */
            const size_t u = jh * (GDN_D / 32) + (tid >> 5);
            q8_1_unit(o, a.xq + u * 32, a.ds + u * 2);
        }
    }
    if (tid == 0) sync[j] = 0;
}

/* column blocks per head: 4 (32 columns a block) from 32 value heads up, else 8, so that a sequence's
 * step runs on >= 128 blocks; from Hv alone, so a sequence's bits do not depend on n */
static int gdn_cb(int Hv) { return Hv >= 32 ? 4 : 8; }

extern "C" int cuda_gdn_step(const cuda_gdn_args *a, cudaStream_t s) {
    if (!a || !a->qkv || !a->conv_w || !a->alpha || !a->beta_raw || !a->ssm_a || !a->dt_bias || !a->z || !a->norm_w ||
        !a->o || !a->sync || !a->xq != !a->ds || ((uintptr_t)a->xq & 15) || a->n < 1 || a->n > CUDA_GDN_MAX_SEQS ||
        a->Hk < 1 || a->Hv < 1 || a->Hv % a->Hk || a->Kc < 2 || !(a->eps >= 0.0f))
        return CUDA_KERR_ARGS;
    for (int i = 0; i < a->n; i++)
        if (!a->seq[i].conv || !a->seq[i].S) return CUDA_KERR_ARGS;
    if (a->Dk != GDN_D || a->Dv != GDN_D) return CUDA_KERR_UNSUPPORTED;
    if (gdn_cb(a->Hv) == 4) kl(k_gdn_step<4>, dim3(a->Hv, 4, a->n), 256, 0, s, *a);
    else kl(k_gdn_step<8>, dim3(a->Hv, 8, a->n), 256, 0, s, *a);
    return launch_status();
}
