/* gemm_wgmma: the two-pass prefill product on Hopper's warpgroup tensor cores (sm_90a, issue 12):
 * Y[T][N] f32 = X[T][K] . W[N][K]^T, X bf16 [T][K] (the activations), W bf16 [N][K] (cuda_dequant_bf16's
 * dequantized weights), both row-major, f32 accumulation. The same product as cuda_gemm_bf16 (gemm_q.cu).
 *
 * Why this shape: mma.sync (gemm_q.cu) reaches 231-283 TFLOP/s on an H200 against a ~790 TFLOP/s bf16
 * ceiling; Hopper's full rate needs wgmma.mma_async, which reads both operands straight from shared memory
 * through matrix descriptors, and tiles fed by the copy engine (TMA) so that no thread spends issue slots
 * on loads. Both operands are K-major (X's and W's rows run along K), which is wgmma's native layout for
 * bf16: no transposition anywhere.
 *
 * Tiling (gemm_wgmma_kernel<BN, ST>): a block of 3 warpgroups (384 threads) computes a 128 (tokens) x BN
 * (weight rows) tile of Y, BN = 128 or 256, stepping through K 64 values at a time:
 *  - warpgroup 0 is the producer: one thread issues two cp.async.bulk.tensor.2d per k step (the X tile
 *    [128][64] and the W tile [BN][64], 128-byte swizzle) into stage k % ST of an ST-deep ring, and the
 *    stage's "full" mbarrier counts the bytes in (expect_tx / complete_tx);
 *  - warpgroups 1 and 2 are the consumers: warpgroup c owns tokens 64c..64c+63 of the tile, waits for a
 *    stage to be full, issues 4 wgmma m64nBNk16 (one per 16 values of K) on it, keeps one k step of
 *    wgmmas in flight (wait_group 1), and frees the previous step's stage (its "empty" mbarrier, one
 *    arrival per consumer warp), which the producer waits for before refilling it;
 *  - setmaxnreg moves registers from the producer (40) to the consumers (232): a consumer holds BN / 2 f32
 *    accumulators (128 at BN = 256);
 *  - epilogue: each consumer thread stores its accumulators as float2 straight to Y (rows >= T and
 *    columns >= N skipped; the copy engine zero-fills the tiles' rows past T and N).
 * Grid (ceil(T / 128), ceil(N / BN)), token tiles fastest: the blocks of one wave share a few W tiles and
 * sweep X (which stays in L2), so W is read from DRAM about once.
 *
 * Shared memory (one tile per stage, each 1024-byte aligned: the 128-byte swizzle repeats every 8 rows of
 * 128 bytes, and both the copy engine and the descriptors anchor it at 1024-byte boundaries): row r of a
 * tile holds its 64 values (128 bytes) at r * 128, 16-byte chunk c stored at chunk c ^ (r & 7): the layout
 * of gemm_q.cu's pf_swz, written by the copy engine. A descriptor names the tile's start (>> 4), swizzle
 * mode 1 (128 B, bits 62-63), the stride between groups of 8 rows (1024 B, >> 4 = 64) and a leading offset
 * that K-major swizzled operands do not use (1). The k16 step j of a stage starts 32 j bytes further: the
 * hardware applies the XOR to the address bits, so start + 32 j reads logical chunks 2j, 2j + 1 of every
 * row wherever the swizzle put them (the same rule the copy engine wrote by).
 *
 * Bits: every output is the sum over K of the same sequence of wgmmas (k16 steps in order, from zero)
 * whatever T and the tile position (no split-K), so a prompt prefilled in chunks of any size gets the bits of
 * one pass (the check launches 64-token chunks alone). Measured on an H100 (2026-12-07, ~10^8 outputs of 21
 * cases): the n128 and n256 tiles give the same bits, and so does cuda_gemm_bf16 (mma.sync m16n8k16: the
 * same k16 accumulation) wherever that one does not split K; the check fails if either ever differs, since
 * the executor relies on both (the tile read from T as well as N below; this kernel for >= 256 rows and
 * mma.sync below, chunks of a prompt on either side of that line).
 * Built only for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL): the sm_80 (and plain sm_90) kernel body traps, and
 * cuda_gemm_wgmma_available() says 0 unless the device is cc 9.0 and this binary has sm_90a code
 * (LLM170_CUDA_SM90A from CMake). The tensor maps are encoded on the host by cuTensorMapEncodeTiled,
 * reached through cudaGetDriverEntryPointByVersion so that nothing links libcuda. */
#include <cuda.h> /* CUtensorMap and its enums: types only */
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled */
#include <cuda_runtime.h>
#include <stdint.h>

#include "backends/cuda/kernels.h"
#include "backends/cuda/kernels/cuda_common.cuh"
#include "backends/cuda/kernels/prefill_mma.cuh"

#define WG_BM 128 /* tokens per block: 2 consumer warpgroups of 64 */
#define WG_BK 64 /* values of K per stage: one 128-byte swizzled row */
#define WG_THREADS 384

template <int BN, int ST> struct wg_smem {
    enum {
        A = WG_BM * WG_BK * 2, /* X tile bytes */
        B = BN * WG_BK * 2, /* W tile bytes */
        STAGE = A + B,
        BARS = ST * STAGE, /* then ST "full" and ST "empty" mbarriers of 8 bytes */
        BYTES = BARS + 16 * ST + 1024 /* + room to align the start to 1024 bytes */
    };
    static_assert(A % 1024 == 0 && B % 1024 == 0, "every tile starts 1024-byte aligned (128-byte swizzle)");
};

/* the shared-memory matrix descriptor of a K-major tile with 128-byte swizzle at shared address a */
__host__ __device__ constexpr uint64_t wg_desc(uint32_t a) {
    return (uint64_t)((a & 0x3FFFFu) >> 4) /* bits 0-13: start address >> 4 */
           | (uint64_t)1 << 16 /* bits 16-29: leading byte offset >> 4 (unused: K-major, swizzled) */
           | (uint64_t)(1024 >> 4) << 32 /* bits 32-45: stride byte offset >> 4: 8 rows of 128 bytes */
           | (uint64_t)1 << 62; /* bits 62-63: swizzle mode, 1 = 128 bytes; bits 49-51 (base offset) 0 */
}
static_assert(wg_desc(0x400) == 0x4000004000010040ull, "descriptor fields");
static_assert(wg_desc(0x400) + 2 == wg_desc(0x420), "a k16 step (32 bytes) adds 2 to the start field");

/* The 128-byte swizzle as the hardware applies it to a shared address (tiles 1024-byte aligned): bits 4-6
 * (the 16-byte chunk) XOR bits 7-9 (the row within a group of 8). */
constexpr uint32_t wg_swz(uint32_t a) { return a ^ (((a >> 7) & 7u) << 4); }
/* The K advance, checked at compile time: value k of k16 step j in row r, as a descriptor starting 32 j
 * bytes into the tile reads it (row r at (r / 8) * 1024 + (r % 8) * 128, the value 2 k bytes on, then the
 * swizzle of that address), is where the copy engine wrote value 16 j + k of row r (pf_swz's layout: chunk c
 * of row r at chunk c ^ (r & 7)). */
constexpr bool wg_k_advance_ok(void) {
    for (uint32_t r = 0; r < 16; r++)
        for (uint32_t j = 0; j < WG_BK / 16; j++)
            for (uint32_t k = 0; k < 16; k++) {
                const uint32_t v = 16 * j + k, read = wg_swz(32 * j + (r / 8) * 1024 + (r % 8) * 128 + 2 * k);
                if (read != pf_swz((int)r, (int)(v / 8)) + 2 * (v % 8)) return false;
            }
    return true;
}
static_assert(wg_k_advance_ok(), "the descriptor's 32-byte K advance reads the values the copy engine wrote");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* ---- sm_90a building blocks (PTX ISA: mbarrier, cp.async.bulk.tensor, wgmma, setmaxnreg) ---- */

__device__ __forceinline__ void wg_bar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
/* the copy engine must see initialised barriers */
__device__ __forceinline__ void wg_bar_init_fence(void) {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/* returns once the phase of parity `parity` has completed (a fresh barrier counts parity 1 as done). A
 * wait of 2^26 tries (seconds; a real one lasts microseconds) traps: a copy that never lands (a bad tensor
 * map) becomes a launch error that cuda-check reports, not a hang. */
__device__ __forceinline__ void wg_bar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done, tries = 0;
    do {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
        if (++tries == 1u << 26) __trap();
    } while (!done);
}
/* one arrival that also expects `bytes` of copies to land before the phase completes */
__device__ __forceinline__ void wg_bar_expect(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void wg_bar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
/* the box of map at (x = value index along K, y = row) into shared dst; completes bytes on bar */
__device__ __forceinline__ void wg_tma_2d(uint32_t dst, const CUtensorMap *map, int x, int y, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
                 "%3}], [%4];\n" ::"r"(dst),
                 "l"((uint64_t)(uintptr_t)map), "r"(x), "r"(y), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void wg_prefetch_map(const CUtensorMap *map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)(uintptr_t)map) : "memory");
}

__device__ __forceinline__ void wg_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait(void) {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* keeps the compiler from moving accumulator reads or writes across the asynchronous wgmmas */
template <int NA> __device__ __forceinline__ void wg_fence_acc(float (&d)[NA]) {
#pragma unroll
    for (int i = 0; i < NA; i++) asm volatile("" : "+f"(d[i])::"memory");
}

#define WG_F8(i)                                                                                               \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])

/* d[64 x 128] += A[64 x 16] . B[128 x 16]^T, both K-major from shared memory (descriptors a, b) */
__device__ __forceinline__ void wg_mma_n128(float (&d)[64], uint64_t a, uint64_t b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
                 "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "
                 "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
                 "%62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : WG_F8(0), WG_F8(8), WG_F8(16), WG_F8(24), WG_F8(32), WG_F8(40), WG_F8(48), WG_F8(56)
                 : "l"(a), "l"(b));
}
/* d[64 x 256] += A[64 x 16] . B[256 x 16]^T */
__device__ __forceinline__ void wg_mma_n256(float (&d)[128], uint64_t a, uint64_t b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
                 "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "
                 "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
                 "%62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, "
                 "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, "
                 "%102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, "
                 "%119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
                 : WG_F8(0), WG_F8(8), WG_F8(16), WG_F8(24), WG_F8(32), WG_F8(40), WG_F8(48), WG_F8(56), WG_F8(64),
                   WG_F8(72), WG_F8(80), WG_F8(88), WG_F8(96), WG_F8(104), WG_F8(112), WG_F8(120)
                 : "l"(a), "l"(b));
}
#undef WG_F8
#endif

/* grid (ceil(T / 128), ceil(N / BN)), 384 threads, wg_smem<BN, ST>::BYTES of dynamic shared memory.
 * tmx: X [T][K] bf16, box [128 rows][64 values]; tmw: W [N][K] bf16, box [BN rows][64 values]; both with
 * the 128-byte swizzle. Block (x, y) computes Y rows 128 x .. + 127, columns BN y .. + BN - 1. */
template <int BN, int ST>
__global__ void __launch_bounds__(WG_THREADS, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap tmx, const __grid_constant__ CUtensorMap tmw,
                      float *__restrict__ Y, int T, int N, int K) {
    pdl_enter();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    typedef wg_smem<BN, ST> L;
    extern __shared__ uint8_t wg_raw[];
    const uint32_t raw = pf_smem_addr(wg_raw);
    const uint32_t sbase = (raw + 1023u) & ~1023u; /* stage s: X tile at sbase + s STAGE, W tile after it */
    const uint32_t full = sbase + L::BARS, empty = full + 8 * ST; /* barrier s at + 8 s */
    const int wg = threadIdx.x / 128, m0 = blockIdx.x * WG_BM, n0 = blockIdx.y * BN, nk = K / WG_BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < ST; s++) {
            wg_bar_init(full + 8 * s, 1); /* the producer's expect_tx arrival (+ the bytes) */
            wg_bar_init(empty + 8 * s, 8); /* one arrival per consumer warp */
        }
        wg_bar_init_fence();
    }
    __syncthreads();

    if (wg == 0) { /* producer: one thread drives the copy engine */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x == 0) {
            wg_prefetch_map(&tmx);
            wg_prefetch_map(&tmw);
            for (int kt = 0, s = 0, ph = 0; kt < nk; kt++) {
                wg_bar_wait(empty + 8 * s, ph ^ 1); /* round 0 passes: the "previous" phase of a fresh barrier */
                wg_bar_expect(full + 8 * s, L::STAGE);
                wg_tma_2d(sbase + s * L::STAGE, &tmx, kt * WG_BK, m0, full + 8 * s);
                wg_tma_2d(sbase + s * L::STAGE + L::A, &tmw, kt * WG_BK, n0, full + 8 * s);
                if (++s == ST) s = 0, ph ^= 1;
            }
        }
    } else { /* consumer c = wg - 1: tokens m0 + 64 c .. + 63 of the tile */
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
        const int c = wg - 1, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
        float d[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; i++) d[i] = 0.0f;
        for (int kt = 0, s = 0, ph = 0; kt < nk; kt++) {
            wg_bar_wait(full + 8 * s, ph);
            const uint64_t da = wg_desc(sbase + s * L::STAGE + c * 64 * 128), db = wg_desc(sbase + s * L::STAGE + L::A);
            wg_fence_acc(d);
            wg_fence();
#pragma unroll
            for (int j = 0; j < WG_BK / 16; j++) { /* k16 step j: 32 bytes further into every row */
                if constexpr (BN == 256) wg_mma_n256(d, da + 2 * j, db + 2 * j);
                else wg_mma_n128(d, da + 2 * j, db + 2 * j);
            }
            wg_commit();
            wg_fence_acc(d);
            wg_wait<1>(); /* step kt - 1's wgmmas are done with their stage: hand it back */
            if (kt > 0 && lane == 0) wg_bar_arrive(empty + 8 * (s == 0 ? ST - 1 : s - 1));
            if (++s == ST) s = 0, ph ^= 1;
        }
        wg_wait<0>();
        wg_fence_acc(d);
        /* accumulator layout of m64nBN: warp w holds rows 16 w + lane / 4 (d[4 j], d[4 j + 1]) and + 8
         * (d[4 j + 2], d[4 j + 3]), columns 8 j + 2 (lane % 4) + {0, 1} */
        const int t0 = m0 + c * 64 + warp * 16 + lane / 4;
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
            const int col = n0 + 8 * j + 2 * (lane % 4);
            if (col >= N) continue; /* N even: col + 1 < N too */
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int t = t0 + 8 * h;
                if (t < T) *(float2 *)(Y + (size_t)t * N + col) = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
            }
        }
    }
#else
    __trap(); /* no sm_90a code: cuda_gemm_wgmma_available() keeps the launcher from getting here */
#endif
}

/* ---- launchers ---- */

/* the tile width: 256 weight rows unless its last wave would leave more of the machine idle than 128 rows'
 * waves would, counting the 256-row tile's higher throughput a tile as 1.15x (H100, 2026-12-07: 631 against
 * 520 TFLOP/s on 14336 x 4096 at 4096 tokens, 1.21x; at 1.2 the 27B's 17408 x 5120 at 512 tokens ties,
 * where n128 measured faster). So n256 for the wide matrices and long prompts, n128 where a
 * 512-token prompt makes few tiles (4096 x 4096: 28.1 against 42.1 us; 17408 x 5120: 163 against 175). Both
 * tiles give the same bits (the check requires it), so reading T here keeps chunked prefill exact. */
static int wg_bn(int T, int N) {
    static int sms_seen; /* the first device's multiprocessors (contexts may launch from several threads) */
    int sms = __atomic_load_n(&sms_seen, __ATOMIC_RELAXED);
    if (!sms) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
            return 128;
        __atomic_store_n(&sms_seen, sms, __ATOMIC_RELAXED);
    }
    const long mt = (T + WG_BM - 1) / WG_BM, t256 = mt * ((N + 255) / 256), t128 = mt * ((N + 127) / 128);
    const double f256 = (double)t256 / ((t256 + sms - 1) / sms * sms), f128 = (double)t128 / ((t128 + sms - 1) / sms * sms);
    return f256 * 1.15 >= f128 ? 256 : 128;
}

/* the driver's tensor-map encoder (the 12.0 ABI), NULL where the driver lacks it; asked once */
static PFN_cuTensorMapEncodeTiled_v12000 wg_encoder(void) {
    static void *fn;
    static int tried;
    if (!__atomic_load_n(&tried, __ATOMIC_ACQUIRE)) {
        void *p = NULL;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) !=
                cudaSuccess ||
            q != cudaDriverEntryPointSuccess) {
            p = NULL;
            (void)cudaGetLastError();
        }
        __atomic_store_n(&fn, p, __ATOMIC_RELAXED);
        __atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
    }
    return (PFN_cuTensorMapEncodeTiled_v12000)__atomic_load_n(&fn, __ATOMIC_RELAXED);
}

/* a bf16 [rows][K] row-major matrix at p as 2-D tiles of [box_rows][64], 128-byte swizzle; rows past the
 * end read as zeros */
static int wg_map(CUtensorMap *m, const void *p, int rows, int K, int box_rows) {
    PFN_cuTensorMapEncodeTiled_v12000 enc = wg_encoder();
    const cuuint64_t dim[2] = {(cuuint64_t)K, (cuuint64_t)rows}, stride[1] = {(cuuint64_t)K * 2};
    const cuuint32_t box[2] = {WG_BK, (cuuint32_t)box_rows}, step[2] = {1, 1};
    if (!enc) return CUDA_KERR_UNSUPPORTED;
    return enc(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)p, dim, stride, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS
               ? CUDA_KERR_OK
               : CUDA_KERR_ARGS;
}

extern "C" int cuda_gemm_wgmma_available(void) {
#ifndef LLM170_CUDA_SM90A
    return 0; /* built without sm_90a code */
#else
    static int known[64]; /* per device: 0 not asked yet, 1 yes, -1 no */
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 0;
    int v = __atomic_load_n(&known[dev], __ATOMIC_RELAXED);
    if (!v) {
        cudaFuncAttributes fa;
        const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess &&
                        major == 9 && minor == 0 &&
                        cudaFuncGetAttributes(&fa, gemm_wgmma_kernel<256, 4>) == cudaSuccess &&
                        fa.binaryVersion >= 90 && wg_encoder() != NULL; /* the cubin loaded is sm_90a's */
        if (!ok) (void)cudaGetLastError(); /* a refusal above is an answer, not a pending error */
        v = ok ? 1 : -1;
        __atomic_store_n(&known[dev], v, __ATOMIC_RELAXED);
    }
    return v > 0;
#endif
}

template <int BN, int ST>
static int wg_launch(const uint16_t *W, const uint16_t *X, float *Y, int T, int N, int K, cudaStream_t s) {
    const int bytes = (int)wg_smem<BN, ST>::BYTES;
    CUtensorMap mx, mw;
    int rc = wg_map(&mx, X, T, K, WG_BM);
    if (!rc) rc = wg_map(&mw, W, N, K, BN);
    if (rc) return rc;
    if (cudaFuncSetAttribute(gemm_wgmma_kernel<BN, ST>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) !=
        cudaSuccess)
        return CUDA_KERR_LAUNCH;
    dim3 grid((T + WG_BM - 1) / WG_BM, (N + BN - 1) / BN);
    kl(gemm_wgmma_kernel<BN, ST>, grid, WG_THREADS, bytes, s, mx, mw, Y, T, N, K);
    return pf_launched();
}

extern "C" int cuda_gemm_bf16_wgmma_tile(const uint16_t *W, const uint16_t *X, float *Y, int T, int N, int K, int BN,
                                         cudaStream_t s) {
    if (!W || !X || !Y || T < 1 || N < 1 || N % 2 || K < WG_BK || K % WG_BK || (BN != 128 && BN != 256) ||
        ((uintptr_t)W & 15) || ((uintptr_t)X & 15) || ((uintptr_t)Y & 7) || (N + BN - 1) / BN > 65535)
        return CUDA_KERR_ARGS;
    if (!cuda_gemm_wgmma_available()) return CUDA_KERR_UNSUPPORTED;
    /* 4 stages of 48 KB at BN = 256, 6 of 32 KB at BN = 128: ~193 KB of the 227 KB a block may have */
    return BN == 256 ? wg_launch<256, 4>(W, X, Y, T, N, K, s) : wg_launch<128, 6>(W, X, Y, T, N, K, s);
}

extern "C" int cuda_gemm_bf16_wgmma(const uint16_t *W, const uint16_t *X, float *Y, int T, int N, int K,
                                    cudaStream_t s) {
    return cuda_gemm_bf16_wgmma_tile(W, X, Y, T, N, K, wg_bn(T, N), s);
}
