/* prefill_mma.cuh: the tensor-core building blocks shared by the prefill kernels (gemm_q.cu,
 * flash_attn_prefill.cu): cp.async copies (16 bytes, with a source size so tails zero-fill), ldmatrix,
 * mma.sync m16n8k16 (bf16 and f16 inputs, f32 accumulators), and the swizzle of the shared-memory tiles.
 *
 * Tiles in shared memory are rows of 64 16-bit values = 128 bytes = 8 chunks of 16 bytes. Chunk c of row
 * r lives at chunk c ^ (r & 7): the 8 rows an ldmatrix reads at one logical chunk then hit 8 different
 * bank groups (no conflicts), and a cp.async of one chunk stays one aligned 16-byte store.
 * All of this is sm_80 PTX; it runs unchanged on sm_90. */
#ifndef LLM170_CUDA_PREFILL_MMA_CUH
#define LLM170_CUDA_PREFILL_MMA_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "backends/cuda/kernels.h"

/* a launcher's status after its launches: CUDA_KERR_OK, or CUDA_KERR_LAUNCH when the launch failed */
static inline int pf_launched(void) { return cudaGetLastError() == cudaSuccess ? CUDA_KERR_OK : CUDA_KERR_LAUNCH; }

/* byte offset of 16-byte chunk c (0..7) of row r in a swizzled 128-byte-row tile */
__host__ __device__ __forceinline__ constexpr uint32_t pf_swz(int r, int c) { return (uint32_t)(r * 128 + ((c ^ (r & 7)) << 4)); }

__device__ __forceinline__ uint32_t pf_smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* 16 bytes global -> shared; only src_bytes (0..16) are read, the rest of the 16 are zero-filled */
__device__ __forceinline__ void pf_cp_async16(uint32_t dst, const void *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void pf_cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void pf_cp_async_wait(void) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void pf_ldmatrix_x4(uint32_t r[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
/* transposed: for a row-major [k][n] operand read as the "col" B fragment */
__device__ __forceinline__ void pf_ldmatrix_x4_trans(uint32_t r[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* c[16x8] += a[16x16] . b[16x8], bf16 inputs, f32 accumulators (fragment layouts of the PTX ISA) */
__device__ __forceinline__ void pf_mma_bf16(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
/* the same with f16 inputs */
__device__ __forceinline__ void pf_mma_f16(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#endif
