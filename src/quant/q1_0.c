/* q1_0: the 1-bit type Q1_0 (128 values, one fp16 d, 1.125 bits per weight), scalar reference.
 *
 * x = bit ? d : -d, value j in bit j % 8 of qs[j / 8]. gguf-py 0.19 knows the type's size but has no
 * dequantizer or quantizer for it, so both follow llama.cpp's reference: quantize stores the sign of each
 * value (bit set for x >= 0) and d = mean |x|, summed in order in float. vec_dot pairs with Q8_0, four
 * Q8_0 blocks per Q1_0 block, and sums +-q8 in integers per Q8_0 block.
 * u8 form (quant.h): u = 2 * bit (off 1), S = d repeated per 32 values (the activation block): d * (u - 1)
 * is +-d exactly. */
#include <math.h>

#include "base/fp16.h"
#include "quant/blocks.h"
#include "quant/iquants.h"

_Static_assert(QK1_0 % QK8_0 == 0, "a Q1_0 block spans whole Q8_0 blocks");

void q1_0_to_float(const void *vx, float *y, int64_t n) {
    const block_q1_0 *x = vx;
    for (int64_t i = 0; i < n / QK1_0; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK1_0; j++) *y++ = (x[i].qs[j / 8] >> (j % 8)) & 1 ? d : -d;
    }
}

void q1_0_from_float(const float *x, void *vy, int64_t n) {
    block_q1_0 *y = vy;
    for (int64_t i = 0; i < n / QK1_0; i++, x += QK1_0) {
        float sum_abs = 0.0f;
        for (int j = 0; j < QK1_0; j++) sum_abs += fabsf(x[j]);
        y[i].d = fp16_from_f32(sum_abs / (float)QK1_0);
        for (int b = 0; b < QK1_0 / 8; b++) {
            uint8_t bits = 0;
            for (int j = 0; j < 8; j++) bits |= (uint8_t)((x[8 * b + j] >= 0.0f) << j);
            y[i].qs[b] = bits;
        }
    }
}

void q1_0_vec_dot_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q1_0 *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK1_0; i++) {
        float sumb = 0.0f;
        for (int k = 0; k < QK1_0 / QK8_0; k++) {
            const block_q8_0 *yb = &y[i * (QK1_0 / QK8_0) + k];
            const uint8_t *bits = x[i].qs + k * QK8_0 / 8;
            int32_t sumi = 0;
            for (int j = 0; j < QK8_0; j++) sumi += (bits[j / 8] >> (j % 8)) & 1 ? yb->qs[j] : -yb->qs[j];
            sumb += fp16_to_f32(yb->d) * (float)sumi;
        }
        sumf += fp16_to_f32(x[i].d) * sumb;
    }
    *s = sumf;
}

void q1_0_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_q1_0 *x = vx;
    for (int64_t i = 0; i < n / QK1_0; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int k = 0; k < QK1_0 / 32; k++) *S++ = d;
        for (int j = 0; j < QK1_0; j++) *u++ = (uint8_t)(2 * ((x[i].qs[j / 8] >> (j % 8)) & 1));
    }
}

void quant_register_q1_0(quant_table t) {
    t[QT_Q1_0][QUANT_ISA_SCALAR] = (quant_ops){.to_float = q1_0_to_float, .from_float = q1_0_from_float, .vec_dot = q1_0_vec_dot_q8_0, .vec_dot_type = QT_Q8_0};
    t[QT_Q1_0][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = q1_0_to_u8, .sb = 32, .off = 1, .umax = 2};
}
