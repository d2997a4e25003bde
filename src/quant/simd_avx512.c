/* simd_avx512: the AVX-512 (F/BW/VL/DQ/VNNI) quant kernels and their registration under
 * QUANT_ISA_AVX512.
 *
 * The block kernels are the AVX2-shaped ones of simd_x86_legacy.h / simd_x86_kquants.h /
 * simd_x86_iquants.h compiled with VNNI, so each 32-byte dot product is one vpdpbusd (or pmaddubsw +
 * vpdpwssd with per-sub-block scales) instead of pmaddubsw + pmaddwd + paddd. The float types, whose rows are long runs of independent lanes,
 * get 512-bit kernels here: 16 floats per register, 4 accumulators (a 4-cycle FMA latency per chain).
 * Two-blocks-per-zmm versions of the Q4_0 / Q8_0 dot products were tried and dropped: +5% / +30% in L2
 * on Zen 4 but -27% / -34% on a Sapphire Rapids-class Xeon, and equal when streaming from memory.
 * Called only after quant_isa_available(QUANT_ISA_AVX512). */
#define SIMD_SUFFIX _avx512
#include "quant/simd_x86_legacy.h"
#include "quant/simd_x86_kquants.h"
#include "quant/simd_x86_iquants.h"
#include "quant/simd_x86_register.h"
#include "quant/simd_x86_multi.h"
#include "quant/simd_x86_span.h"
#include "quant/simd_x86_u8.h"

static inline __m512 f16x16(const uint16_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
static inline __m512 bf16x16(const uint16_t *p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}

/* Dot products over 64 values per step; the tail (n % 64) goes to the 256-bit kernel of the same type. */
#define DOT512(name, T, load, tail)                                                                    \
    static void name(int64_t n, float *s, const void *vx, const void *vy) {                           \
        const T *x = vx, *y = vy;                                                                     \
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();                                    \
        __m512 a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();                                    \
        int64_t i = 0;                                                                                \
        for (; i + 64 <= n; i += 64) {                                                                \
            simd_prefetch(x + i, 64 * sizeof *x);                                                     \
            a0 = _mm512_fmadd_ps(load(x + i), load(y + i), a0);                                       \
            a1 = _mm512_fmadd_ps(load(x + i + 16), load(y + i + 16), a1);                             \
            a2 = _mm512_fmadd_ps(load(x + i + 32), load(y + i + 32), a2);                             \
            a3 = _mm512_fmadd_ps(load(x + i + 48), load(y + i + 48), a3);                             \
        }                                                                                             \
        float rest = 0.0f;                                                                            \
        if (i < n) tail(n - i, &rest, x + i, y + i);                                                  \
        *s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))) + rest; \
    }

DOT512(f32_vec_dot_f32_avx512w, float, _mm512_loadu_ps, f32_vec_dot_f32_avx512)
DOT512(f16_vec_dot_f16_avx512w, uint16_t, f16x16, f16_vec_dot_f16_avx512)
DOT512(bf16_vec_dot_bf16_avx512w, uint16_t, bf16x16, bf16_vec_dot_bf16_avx512)

/* Bit-exact: both conversions are exact. */
static void f16_to_float_avx512w(const void *vx, float *y, int64_t n) {
    const uint16_t *x = vx;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, f16x16(x + i));
    f16_to_float_avx512(x + i, y + i, n - i);
}

static void bf16_to_float_avx512w(const void *vx, float *y, int64_t n) {
    const uint16_t *x = vx;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, bf16x16(x + i));
    bf16_to_float_avx512(x + i, y + i, n - i);
}

void quant_register_avx512(quant_table t) {
    SIMD_NAME(simd_x86_register)(t, QUANT_ISA_AVX512);
    SIMD_NAME(simd_x86_register_iquants)(t, QUANT_ISA_AVX512);
    SIMD_NAME(simd_x86_register_multi)(t, QUANT_ISA_AVX512);
    SIMD_NAME(simd_x86_register_span)(t, QUANT_ISA_AVX512);
    SIMD_NAME(simd_x86_register_u8)(t, QUANT_ISA_AVX512);
    t[QT_F32][QUANT_ISA_AVX512].vec_dot = f32_vec_dot_f32_avx512w;
    t[QT_F16][QUANT_ISA_AVX512].vec_dot = f16_vec_dot_f16_avx512w;
    t[QT_BF16][QUANT_ISA_AVX512].vec_dot = bf16_vec_dot_bf16_avx512w;
    t[QT_F16][QUANT_ISA_AVX512].to_float = f16_to_float_avx512w;
    t[QT_BF16][QUANT_ISA_AVX512].to_float = bf16_to_float_avx512w;
}
