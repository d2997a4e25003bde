/* simd_avx2: the AVX2 (+FMA, F16C) quant kernels and their registration under QUANT_ISA_AVX2.
 *
 * The kernels live in simd_x86_legacy.h, simd_x86_kquants.h and simd_x86_iquants.h, shared with
 * simd_avx512.c, which compiles the same source with VNNI byte dot products; this file only instantiates
 * them with the _avx2 suffix and fills the table. Called only after quant_isa_available(QUANT_ISA_AVX2). */
#define SIMD_SUFFIX _avx2
#include "quant/simd_x86_legacy.h"
#include "quant/simd_x86_kquants.h"
#include "quant/simd_x86_iquants.h"
#include "quant/simd_x86_register.h"
#include "quant/simd_x86_multi.h"
#include "quant/simd_x86_span.h"
#include "quant/simd_x86_u8.h"

void quant_register_avx2(quant_table t) {
    SIMD_NAME(simd_x86_register)(t, QUANT_ISA_AVX2);
    SIMD_NAME(simd_x86_register_iquants)(t, QUANT_ISA_AVX2);
    SIMD_NAME(simd_x86_register_multi)(t, QUANT_ISA_AVX2);
    SIMD_NAME(simd_x86_register_span)(t, QUANT_ISA_AVX2);
    SIMD_NAME(simd_x86_register_u8)(t, QUANT_ISA_AVX2);
}
