/* rope: rotary position embedding of x[T][H][D] in place, as ref_rope (NORM pairs (2i, 2i+1), NEOX
 * pairs (i, i + n_rot/2); dims past n_rot pass through; per-pair frequency divisors for llama3).
 * Grid: one block per (t, h) row; thread i < n_rot/2 rotates pair i. The angle is formed as the
 * reference forms it, pos * freq_scale * theta^(-2i/n_rot) / factor, in float with powf, sincosf. */
#include "backends/cuda/kernels/cuda_common.cuh"

/* blocks [0, rows1) rotate x[T][H], blocks past them x2[T][H2] (the pair form; x2 NULL: one buffer) */
__global__ void k_rope(float *x, const int32_t *__restrict__ pos, int H, int D, int mode, int n_rot, float theta,
                       float freq_scale, const float *__restrict__ factors, float *x2, int H2, int rows1) {
    pdl_enter();
    int row = blockIdx.x;
    if (x2 && row >= rows1) x = x2, H = H2, row -= rows1;
    const int t = row / H, half = n_rot / 2;
    float *xh = x + (size_t)row * D;
    const int stride = mode == ROPE_NORM ? 2 : 1, other = mode == ROPE_NORM ? 1 : half;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float freq = powf(theta, -2.0f * (float)i / (float)n_rot);
        if (factors) freq = freq / factors[i];
        float ang = __fmul_rn(__fmul_rn((float)pos[t], freq_scale), freq);
        float sn, c;
        sincosf(ang, &sn, &c);
        float *pa = xh + i * stride, *pb = pa + other;
        float a = *pa, b = *pb;
        *pa = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, sn));
        *pb = __fadd_rn(__fmul_rn(a, sn), __fmul_rn(b, c));
    }
}

extern "C" int cuda_rope(float *x, const int32_t *pos, int T, int H, int D, const rope_params *rp,
                         const float *factors, cudaStream_t s) {
    if (!x || !pos || !rp || T < 1 || H < 1 || D < 2 || rp->n_rot < 2 || rp->n_rot > D || rp->n_rot % 2 ||
        (rp->mode != ROPE_NORM && rp->mode != ROPE_NEOX) || !(rp->theta > 0.0f))
        return CUDA_KERR_ARGS;
    int threads = rp->n_rot / 2 >= 128 ? 128 : 32 * ((rp->n_rot / 2 + 31) / 32);
    kl(k_rope, T * H, threads, 0, s, x, pos, H, D, (int)rp->mode, rp->n_rot, rp->theta, rp->freq_scale, factors,
       nullptr, 0, T * H);
    return launch_status();
}

extern "C" int cuda_rope2(float *x, int H, float *x2, int H2, const int32_t *pos, int T, int D, const rope_params *rp,
                          const float *factors, cudaStream_t s) {
    if (!x || !x2 || !pos || !rp || T < 1 || H < 1 || H2 < 1 || D < 2 || rp->n_rot < 2 || rp->n_rot > D ||
        rp->n_rot % 2 || (rp->mode != ROPE_NORM && rp->mode != ROPE_NEOX) || !(rp->theta > 0.0f))
        return CUDA_KERR_ARGS;
    int threads = rp->n_rot / 2 >= 128 ? 128 : 32 * ((rp->n_rot / 2 + 31) / 32);
    kl(k_rope, T * (H + H2), threads, 0, s, x, pos, H, D, (int)rp->mode, rp->n_rot, rp->theta, rp->freq_scale,
       factors, x2, H2, T * H);
    return launch_status();
}
