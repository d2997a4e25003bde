/* fp16: IEEE half and bfloat16 <-> float conversions, bit-exact with numpy's astype (round to nearest
 * even; NaN stays NaN; overflow to infinity). Header-only so that every quant kernel inlines them. */
#ifndef LLM170_BASE_FP16_H
#define LLM170_BASE_FP16_H

#include <stdint.h>
#include <string.h>

static inline float fp32_from_bits(uint32_t w) { float f; memcpy(&f, &w, 4); return f; }
static inline uint32_t fp32_to_bits(float f) { uint32_t w; memcpy(&w, &f, 4); return w; }

/* half -> float, exact (every half is representable as a float). */
static inline float fp16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return fp32_from_bits(sign | 0x7f800000u | (man << 13)); /* inf / nan */
    if (exp == 0) {
        if (man == 0) return fp32_from_bits(sign);
        /* subnormal half: man * 2^-24 */
        float f = (float)man * 0x1p-24f;
        return sign ? -f : f;
    }
    return fp32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

/* float -> half, round to nearest even (as numpy and the F16C instruction do). */
static inline uint16_t fp16_from_f32(float f) {
    uint32_t x = fp32_to_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf or nan (keep a quiet nan) */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (ax < 0x38800000u) { /* below the smallest normal half (2^-14): subnormal or zero */
        if (ax < 0x33000000u) return (uint16_t)sign; /* < 2^-25: rounds to zero */
        uint32_t e = ax >> 23;
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14..24 */
        uint32_t r = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u); /* round mantissa to 10 bits, ties to even */
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

/* bfloat16 -> float: the top half of a float. */
static inline float bf16_to_f32(uint16_t h) { return fp32_from_bits((uint32_t)h << 16); }

/* float -> bfloat16, round to nearest even; NaN kept quiet (as ggml and gguf-py do). */
static inline uint16_t bf16_from_f32(float f) {
    uint32_t x = fp32_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 64u);
    return (uint16_t)((x + (0x7fffu + ((x >> 16) & 1u))) >> 16);
}

#endif
