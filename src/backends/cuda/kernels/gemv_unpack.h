/* gemv_unpack: the GEMV weight layout's unit decoding, shared by the CUDA kernel (kernels/gemv.cu) and the
 * host (repack.c, the repack test), so the test exercises the very code the kernel runs.
 *
 * The layout (made by cuda_repack): a row of K values is K/32 "units" of 32 values. Per unit:
 *   qs: 16 bytes; byte b holds value b in its low nibble and value 16 + b in its high nibble (Q8_0: 32
 *       bytes, value v in byte v). Read as words q[0..3]: word s, byte k is value 4s + k (low nibbles) and
 *       16 + 4s + k (high nibbles), so lane word s of the unit (values 4s..4s+3, s = 0..7) lines up with
 *       word s of the int8 activations: one dp4a per word.
 *   hi: Q5_0/Q5_K: one word, byte k bit s = 5th bit of value 4s + k (s = 0..7);
 *       Q6_K: two words, word i byte k bits 2s..2s+1 = top two bits of value 16i + 4s + k (s = 0..3).
 *   meta: Q4_0/Q5_0/Q8_0: f16 d per unit; Q4_1: f16 d, m per unit; Q4_K/Q5_K: the GGUF super-block's
 *       16 bytes (f16 d, f16 dmin, 12 bytes of 6-bit scales and mins) per 256 values; Q6_K: per 256 values
 *       20 bytes: 16 int8 scales, f16 d, 2 zero bytes.
 * A unit's value v is then  w_v = a * lane_v + b  (lane_v the signed int8 of lane v; Q6_K: a times the
 * scale of its 16-value half, sc0 for v < 16, sc1 above), which gemv_unit_scale returns, formed with the
 * same float operations as the CPU dequantizers (quant/legacy.c, quant/kquants.c). */
#ifndef LLM170_BACKENDS_CUDA_GEMV_UNPACK_H
#define LLM170_BACKENDS_CUDA_GEMV_UNPACK_H

#include <stdint.h>

#include "quant/qtype.h"

#ifdef __CUDACC__
#include <cuda_fp16.h>
#define GEMV_HD static __host__ __device__ __forceinline__
#define GEMV_CX static constexpr __host__ __device__
static __host__ __device__ __forceinline__ float gemv_f16(uint16_t h) { return __half2float(__ushort_as_half(h)); }
#else
#include "base/fp16.h"
#define GEMV_HD static inline
#define GEMV_CX static inline
static inline float gemv_f16(uint16_t h) { return fp16_to_f32(h); }
#endif

/* bytes per unit of 32 values in each plane, and meta bytes per meta group (32 or 256 values) */
GEMV_CX int gemv_qs_bytes(enum qtype t) { return t == QT_Q8_0 ? 32 : 16; }
GEMV_CX int gemv_hi_bytes(enum qtype t) { return t == QT_Q5_0 || t == QT_Q5_K ? 4 : t == QT_Q6_K ? 8 : 0; }
GEMV_CX int gemv_meta_group(enum qtype t) { return t == QT_Q4_K || t == QT_Q5_K || t == QT_Q6_K ? 256 : 32; }
GEMV_CX int gemv_meta_bytes(enum qtype t) {
    switch (t) {
    case QT_Q4_1: return 4;
    case QT_Q4_K: case QT_Q5_K: return 16;
    case QT_Q6_K: return 20;
    default: return 2;
    }
}

/* bytewise x - c for bytes 0..127 and c <= 64 (no borrow between bytes: each byte is lifted by 0x80 first) */
GEMV_HD uint32_t gemv_sub_bytes(uint32_t x, uint32_t c) { return ((x | 0x80808080u) - c * 0x01010101u) ^ 0x80808080u; }

/* The eight lane words (signed int8 per byte) of one unit from its qs words q[] and hi words h[]. */
GEMV_HD void gemv_unpack_unit(enum qtype t, const uint32_t *q, const uint32_t *h, uint32_t *v) {
    if (t == QT_Q8_0) {
        for (int s = 0; s < 8; s++) v[s] = q[s];
        return;
    }
    for (int s = 0; s < 4; s++) {
        v[s] = q[s] & 0x0F0F0F0Fu;
        v[s + 4] = (q[s] >> 4) & 0x0F0F0F0Fu;
    }
    if (t == QT_Q5_0 || t == QT_Q5_K)
        for (int s = 0; s < 8; s++) v[s] |= ((h[0] >> s) & 0x01010101u) << 4;
    if (t == QT_Q6_K)
        for (int s = 0; s < 8; s++) v[s] |= ((h[s >> 2] >> (2 * (s & 3))) & 0x03030303u) << 4;
    uint32_t off = t == QT_Q4_0 ? 8 : t == QT_Q5_0 ? 16 : t == QT_Q6_K ? 32 : 0;
    if (off)
        for (int s = 0; s < 8; s++) v[s] = gemv_sub_bytes(v[s], off);
}

/* Lane word s (0..7) of a unit alone, gemv_unpack_unit's v[s] bit for bit: from qs word s & 3 (Q8_0: word
 * s) and the hi words h. What a tensor-core fragment needs: a lane of an m16n8k32 A fragment holds words
 * c and c + 4 of its rows' units, both from qs word c. */
GEMV_HD uint32_t gemv_unpack_word(enum qtype t, uint32_t q, const uint32_t *h, int s) {
    if (t == QT_Q8_0) return q;
    uint32_t v = s < 4 ? q & 0x0F0F0F0Fu : (q >> 4) & 0x0F0F0F0Fu;
    if (t == QT_Q5_0 || t == QT_Q5_K) v |= ((h[0] >> s) & 0x01010101u) << 4;
    if (t == QT_Q6_K) v |= ((h[s >> 2] >> (2 * (s & 3))) & 0x03030303u) << 4;
    const uint32_t off = t == QT_Q4_0 ? 8 : t == QT_Q5_0 ? 16 : t == QT_Q6_K ? 32 : 0;
    return off ? gemv_sub_bytes(v, off) : v;
}

typedef struct gemv_scale {
    float a, b;   /* w = a * lane + b (Q6_K: (a * sc) * lane) */
    int sc0, sc1; /* integer scales of the unit's halves (1 except Q6_K) */
} gemv_scale;

/* The scale of unit j (0..7) of its meta group (j = 0 for the per-unit legacy metas). */
GEMV_HD gemv_scale gemv_unit_scale(enum qtype t, const uint8_t *m, int j) {
    gemv_scale r;
    r.b = 0.0f;
    r.sc0 = r.sc1 = 1;
    const uint16_t *h = (const uint16_t *)m;
    if (t == QT_Q4_K || t == QT_Q5_K) {
        const uint8_t *sc = m + 4;
        int s, mn;
        if (j < 4) {
            s = sc[j] & 63;
            mn = sc[j + 4] & 63;
        } else {
            s = (sc[j + 4] & 15) | ((sc[j - 4] >> 2) & 0x30);
            mn = (sc[j + 4] >> 4) | ((sc[j] >> 2) & 0x30);
        }
        r.a = gemv_f16(h[0]) * (float)s;
        r.b = -(gemv_f16(h[1]) * (float)mn);
    } else if (t == QT_Q6_K) {
        const int8_t *sc = (const int8_t *)m;
        r.a = gemv_f16(h[8]);
        r.sc0 = sc[2 * j];
        r.sc1 = sc[2 * j + 1];
    } else {
        r.a = gemv_f16(h[0]);
        if (t == QT_Q4_1) r.b = gemv_f16(h[1]);
    }
    return r;
}

#endif
