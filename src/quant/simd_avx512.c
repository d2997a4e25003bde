/* simd_avx512: the AVX-512 (F/BW/VL/DQ/VNNI) quant kernels and their registration under
 * QUANT_ISA_AVX512.
 *
 * The block kernels are the AVX2-shaped ones of simd_x86_legacy.h / simd_x86_kquants.h compiled with
 * VNNI, so each 32-byte dot product is one vpdpbusd (or pmaddubsw + vpdpwssd with per-sub-block scales)
 * instead of pmaddubsw + pmaddwd + paddd. Called only after quant_isa_available(QUANT_ISA_AVX512). */
#define SIMD_SUFFIX _avx512
#include "quant/simd_x86_legacy.h"
#include "quant/simd_x86_kquants.h"
#include "quant/simd_x86_register.h"

void quant_register_avx512(quant_table t) { SIMD_NAME(simd_x86_register)(t, QUANT_ISA_AVX512); }
