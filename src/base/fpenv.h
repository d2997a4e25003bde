/* fpenv: the floating-point mode the engine computes in: subnormal floats flushed to zero.
 *
 * A float below 1.2e-38 in magnitude is subnormal. Intel cores take a microcode assist (~100+ cycles)
 * for every SIMD operation that produces or reads one; AMD's Zen cores mostly do not. The GDN decays
 * make them routinely: exp(gam_i - gam_j) over a 64-token chunk of strongly decaying heads, and every
 * product with such a factor. On a Sapphire Rapids-class Xeon that made the chunked delta rule 2/3 of a
 * qwen35 prefill (pp512 90 t/s; 235 t/s flushed). So compute runs with FTZ (results that would be
 * subnormal become 0) and DAZ (subnormal inputs read as 0): what changes is below 1.2e-38, which no
 * logit can see. The pool's workers set it once (threadpool.c); the calling thread enters it for each
 * forward pass and restores the caller's mode afterwards (forward.c), so a program embedding the library
 * keeps its own mode. No effect where the CPU has no such mode bits in this build. */
#ifndef LLM170_BASE_FPENV_H
#define LLM170_BASE_FPENV_H

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define FPENV_FTZ_DAZ 0x8040u /* MXCSR bits 15 (flush to zero) and 6 (denormals are zero) */
static inline unsigned fpenv_enter(void) {
    unsigned old = _mm_getcsr();
    _mm_setcsr(old | FPENV_FTZ_DAZ);
    return old;
}
static inline void fpenv_leave(unsigned old) { _mm_setcsr(old); }
#else
static inline unsigned fpenv_enter(void) { return 0; }
static inline void fpenv_leave(unsigned old) { (void)old; }
#endif

#endif
