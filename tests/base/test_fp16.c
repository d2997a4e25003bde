/* fp16/bf16 conversions: every one of the 65536 half patterns round-trips through float exactly, and
 * float -> half rounds to nearest even on the boundaries that matter (checked against hand-made values). */
#include <math.h>

#include "base/fp16.h"
#include "check.h"

int main(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = fp16_to_f32((uint16_t)h);
        uint16_t back = fp16_from_f32(f);
        if (isnan(f)) {
            if ((back & 0x7c00) != 0x7c00 || (back & 0x3ff) == 0) bad++;
        } else if (back != h) {
            bad++;
        }
    }
    CHECKF(bad == 0, "%d half patterns did not round-trip", bad);
    CHECK(fp16_from_f32(65504.0f) == 0x7bff);
    CHECK(fp16_from_f32(65520.0f) == 0x7c00);          /* halfway to 2^16 rounds to inf */
    CHECK(fp16_from_f32(65519.99f) == 0x7bff);
    CHECK(fp16_from_f32(1.0f + 0x1p-11f) == 0x3c00);   /* tie, even mantissa stays */
    CHECK(fp16_from_f32(1.0f + 3 * 0x1p-11f) == 0x3c02); /* tie, odd mantissa rounds up */
    CHECK(fp16_from_f32(0x1p-24f) == 0x0001);          /* smallest subnormal */
    CHECK(fp16_from_f32(0x1p-25f) == 0x0000);          /* tie to even: zero */
    CHECK(fp16_from_f32(0x1.8p-25f) == 0x0001);
    CHECK(fp16_from_f32(-0.0f) == 0x8000);
    CHECK(bf16_from_f32(1.0f) == 0x3f80);
    CHECK(bf16_from_f32(fp32_from_bits(0x3f808000u)) == 0x3f80); /* tie to even */
    CHECK(bf16_from_f32(fp32_from_bits(0x3f818000u)) == 0x3f82);
    CHECK(bf16_to_f32(0x3f80) == 1.0f);
    return check_report("test_fp16");
}
