/* simd_x86_multi: dot products of one weight row with FOUR activation rows at once (internal to
 * src/quant/; included by simd_avx2.c and simd_avx512.c after simd_x86_kquants.h).
 *
 * Prefill multiplies every weight row by many tokens. The single-row kernels unpack each weight block
 * (nibbles, high bits, 6-bit scales) once per token; these unpack it once per four tokens and reuse it,
 * which is most of a k-quant dot product's work. For each token they perform exactly the single-row
 * kernel's operations in the same order (same integer sums, same float multiply-adds, same final
 * horizontal sum), so s[j] is bit-identical to SIMD_NAME(<type>_vec_dot_q8_k)(n, &s[j], x, y_j): a token's
 * logits do not depend on how many tokens share its batch. tests/quant/test_quant_dot4.c checks that.
 * Every loop over the four tokens is unrolled (the pragma) so that the per-token accumulators stay in
 * registers: left as loops, gcc -O2 kept them in stack arrays and the kernels ran at half speed. */
#ifndef LLM170_QUANT_SIMD_X86_MULTI_H
#define LLM170_QUANT_SIMD_X86_MULTI_H

#define Y4(j) ((const block_q8_K *)((const char *)vy + (size_t)(j) * ystride))

/* The 8 sub-block mins as 16 int16, each twice (m0 m0 m1 m1 ... m7 m7): one madd with a token's 16 bsums
 * then gives m_j * (bsums[2j] + bsums[2j+1]) in lane j — the same int32s simd_k4_mins forms with a
 * madd, a widening and a mullo per token; here the widening is shared by the four tokens. */
static inline __m256i simd_k4_mdup(uint64_t mn8) {
    const __m128i m = _mm_cvtsi64_si128((long long)mn8);
    return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m, m));
}

/* accm + dmin * dy * sum_j m_j * (bsums[2j] + bsums[2j+1]), lane by lane as simd_k4_mins */
static inline __m256 simd_k4_mins_dup(__m256 accm, __m256i mdup, const block_q8_K *y, float dmin) {
    const __m256i prod = _mm256_madd_epi16(simd_ld(y->bsums), mdup);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(prod), _mm256_set1_ps(y->d * dmin), accm);
}

static void SIMD_NAME(q4_k_vec_dot4_q8_k)(int64_t n, float *s, const void *vx, const void *vy, size_t ystride) {
    const block_q4_K *x = vx;
    const block_q8_K *y[4] = {Y4(0), Y4(1), Y4(2), Y4(3)};
    __m256 acc[4], accm[4];
    _Pragma("GCC unroll 4")
    for (int j = 0; j < 4; j++) acc[j] = accm[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        uint64_t sc8, mn8;
        simd_k4_unpack(x[b].scales, &sc8, &mn8);
        const float d = _cvtsh_ss(x[b].d), dmin = _cvtsh_ss(x[b].dmin);
        const __m256i mdup = simd_k4_mdup(mn8);
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++) accm[j] = simd_k4_mins_dup(accm[j], mdup, &y[j][b], dmin);
        const __m256i sc = simd_u8x8_i16x2(sc8);
#if defined(__AVX512F__) && defined(__AVX512BW__)
        /* 512-bit form: a group's low-nibble and high-nibble halves (sub-blocks 2g, 2g+1) side by side in
         * one zmm against the token's 64 contiguous activation bytes: half the instructions of the 256-bit
         * loop; the two halves of isum are added at the end, so the int32 sums are the same */
        const __m512i sc512 = _mm512_broadcast_i64x4(sc);
        __m512i isum5[4];
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++) isum5[j] = _mm512_setzero_si512();
        for (int g = 0; g < 4; g++) {
            const __m256i q = simd_ld(x[b].qs + 32 * g);
            const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(simd_lo4(q)), simd_hi4(q), 1);
            const __m512i ctrl = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * g)))),
                _mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * g + 1))), 1);
            const __m512i sg = _mm512_shuffle_epi8(sc512, ctrl);
            _Pragma("GCC unroll 4")
            for (int j = 0; j < 4; j++) {
                const __m512i p16 = _mm512_maddubs_epi16(u, _mm512_loadu_si512(y[j][b].qs + 64 * g));
                isum5[j] = _mm512_dpwssd_epi32(isum5[j], p16, sg);
            }
        }
        __m256i isum[4];
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++)
            isum[j] = _mm256_add_epi32(_mm512_castsi512_si256(isum5[j]), _mm512_extracti64x4_epi64(isum5[j], 1));
#else
        __m256i isum[4];
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++) isum[j] = _mm256_setzero_si256();
        for (int g = 0; g < 4; g++) {
            const __m256i q = simd_ld(x[b].qs + 32 * g);
            const __m256i lo = simd_lo4(q), hi = simd_hi4(q);
            const __m256i s0 = simd_pick(sc, 2 * g, 2 * g), s1 = simd_pick(sc, 2 * g + 1, 2 * g + 1);
            _Pragma("GCC unroll 4")
            for (int j = 0; j < 4; j++) {
                isum[j] = simd_dot_u8s8_scaled(isum[j], lo, simd_ld(y[j][b].qs + 64 * g), s0);
                isum[j] = simd_dot_u8s8_scaled(isum[j], hi, simd_ld(y[j][b].qs + 64 * g + 32), s1);
            }
        }
#endif
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++)
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[j]), _mm256_set1_ps(d * y[j][b].d), acc[j]);
    }
    _Pragma("GCC unroll 4")
    for (int j = 0; j < 4; j++) s[j] = simd_hsum_ps(_mm256_sub_ps(acc[j], accm[j]));
}

static void SIMD_NAME(q5_k_vec_dot4_q8_k)(int64_t n, float *s, const void *vx, const void *vy, size_t ystride) {
    const block_q5_K *x = vx;
    const block_q8_K *y[4] = {Y4(0), Y4(1), Y4(2), Y4(3)};
    const __m256i sixteen = _mm256_set1_epi8(16);
    __m256 acc[4], accm[4];
    _Pragma("GCC unroll 4")
    for (int j = 0; j < 4; j++) acc[j] = accm[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        uint64_t sc8, mn8;
        simd_k4_unpack(x[b].scales, &sc8, &mn8);
        const float d = _cvtsh_ss(x[b].d), dmin = _cvtsh_ss(x[b].dmin);
        const __m256i mdup = simd_k4_mdup(mn8);
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++) accm[j] = simd_k4_mins_dup(accm[j], mdup, &y[j][b], dmin);
        const __m256i sc = simd_u8x8_i16x2(sc8);
        const __m256i qh = simd_ld(x[b].qh);
#if defined(__AVX512F__) && defined(__AVX512BW__)
        /* 512-bit form, as in Q4_K above */
        const __m512i sc512 = _mm512_broadcast_i64x4(sc);
        __m512i isum5[4];
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++) isum5[j] = _mm512_setzero_si512();
        for (int g = 0; g < 4; g++) {
            const __m256i q = simd_ld(x[b].qs + 32 * g);
            const __m256i b0 = _mm256_set1_epi8((char)(1 << (2 * g))), b1 = _mm256_set1_epi8((char)(2 << (2 * g)));
            const __m256i h0 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b0), b0), sixteen);
            const __m256i h1 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b1), b1), sixteen);
            const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_or_si256(simd_lo4(q), h0)),
                                                 _mm256_or_si256(simd_hi4(q), h1), 1);
            const __m512i ctrl = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * g)))),
                _mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * g + 1))), 1);
            const __m512i sg = _mm512_shuffle_epi8(sc512, ctrl);
            _Pragma("GCC unroll 4")
            for (int j = 0; j < 4; j++) {
                const __m512i p16 = _mm512_maddubs_epi16(u, _mm512_loadu_si512(y[j][b].qs + 64 * g));
                isum5[j] = _mm512_dpwssd_epi32(isum5[j], p16, sg);
            }
        }
        __m256i isum[4];
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++)
            isum[j] = _mm256_add_epi32(_mm512_castsi512_si256(isum5[j]), _mm512_extracti64x4_epi64(isum5[j], 1));
#else
        __m256i isum[4];
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++) isum[j] = _mm256_setzero_si256();
        for (int g = 0; g < 4; g++) {
            const __m256i q = simd_ld(x[b].qs + 32 * g);
            const __m256i b0 = _mm256_set1_epi8((char)(1 << (2 * g))), b1 = _mm256_set1_epi8((char)(2 << (2 * g)));
            const __m256i h0 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b0), b0), sixteen);
            const __m256i h1 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b1), b1), sixteen);
            const __m256i u0 = _mm256_or_si256(simd_lo4(q), h0), u1 = _mm256_or_si256(simd_hi4(q), h1);
            const __m256i s0 = simd_pick(sc, 2 * g, 2 * g), s1 = simd_pick(sc, 2 * g + 1, 2 * g + 1);
            _Pragma("GCC unroll 4")
            for (int j = 0; j < 4; j++) {
                isum[j] = simd_dot_u8s8_scaled(isum[j], u0, simd_ld(y[j][b].qs + 64 * g), s0);
                isum[j] = simd_dot_u8s8_scaled(isum[j], u1, simd_ld(y[j][b].qs + 64 * g + 32), s1);
            }
        }
#endif
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++)
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[j]), _mm256_set1_ps(d * y[j][b].d), acc[j]);
    }
    _Pragma("GCC unroll 4")
    for (int j = 0; j < 4; j++) s[j] = simd_hsum_ps(_mm256_sub_ps(acc[j], accm[j]));
}

static void SIMD_NAME(q6_k_vec_dot4_q8_k)(int64_t n, float *s, const void *vx, const void *vy, size_t ystride) {
    const block_q6_K *x = vx;
    const block_q8_K *y[4] = {Y4(0), Y4(1), Y4(2), Y4(3)};
    __m256 acc[4];
    _Pragma("GCC unroll 4")
    for (int j = 0; j < 4; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        const __m128i s8 = _mm_loadu_si128((const __m128i *)x[b].scales);
        const __m256i s16 = _mm256_cvtepi8_epi16(s8);
        const float d = _cvtsh_ss(x[b].d);
        __m256i isum[4], isum2[4]; /* two chains per token (even / odd groups), summed exactly: measured
                                    * 1.2x over one chain here (not for Q4_K / Q5_K: register pressure) */
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++) {
            isum[j] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(simd_scaled_bsums(s16, &y[j][b]), 5));
            isum2[j] = _mm256_setzero_si256();
        }
        for (int h = 0; h < 2; h++) {
            __m256i u[4];
            simd_q6_half(x[b].ql + 64 * h, x[b].qh + 32 * h, u);
            const __m256i sc = simd_i8x8_i16x2(h ? _mm_srli_si128(s8, 8) : s8);
            for (int k = 0; k < 4; k += 2) {
                const __m256i sk = simd_pick(sc, 2 * k, 2 * k + 1), sk1 = simd_pick(sc, 2 * k + 2, 2 * k + 3);
                _Pragma("GCC unroll 4")
                for (int j = 0; j < 4; j++) {
                    isum[j] = simd_dot_u8s8_scaled(isum[j], u[k], simd_ld(y[j][b].qs + 128 * h + 32 * k), sk);
                    isum2[j] = simd_dot_u8s8_scaled(isum2[j], u[k + 1], simd_ld(y[j][b].qs + 128 * h + 32 * k + 32), sk1);
                }
            }
        }
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++) isum[j] = _mm256_add_epi32(isum[j], isum2[j]);
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++)
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[j]), _mm256_set1_ps(d * y[j][b].d), acc[j]);
    }
    _Pragma("GCC unroll 4")
    for (int j = 0; j < 4; j++) s[j] = simd_hsum_ps(acc[j]);
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
/* Eight tokens per pass of a Q4_K row (AVX-512 only: 8 zmm sums + 16 ymm float accumulators fit in its 32
 * registers): the weight unpacking is shared by twice as many tokens. Per token, the operations of the
 * four-token kernel's 512-bit form, so the bits equal vec_dot's. */
static void SIMD_NAME(q4_k_vec_dot8_q8_k)(int64_t n, float *s, const void *vx, const void *vy, size_t ystride) {
    const block_q4_K *x = vx;
    const block_q8_K *y[8] = {Y4(0), Y4(1), Y4(2), Y4(3), Y4(4), Y4(5), Y4(6), Y4(7)};
    __m256 acc[8], accm[8];
    _Pragma("GCC unroll 8")
    for (int j = 0; j < 8; j++) acc[j] = accm[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        uint64_t sc8, mn8;
        simd_k4_unpack(x[b].scales, &sc8, &mn8);
        const float d = _cvtsh_ss(x[b].d), dmin = _cvtsh_ss(x[b].dmin);
        const __m256i mdup = simd_k4_mdup(mn8);
        _Pragma("GCC unroll 8")
        for (int j = 0; j < 8; j++) accm[j] = simd_k4_mins_dup(accm[j], mdup, &y[j][b], dmin);
        const __m512i sc512 = _mm512_broadcast_i64x4(simd_u8x8_i16x2(sc8));
        __m512i isum5[8];
        _Pragma("GCC unroll 8")
        for (int j = 0; j < 8; j++) isum5[j] = _mm512_setzero_si512();
        for (int g = 0; g < 4; g++) {
            const __m256i q = simd_ld(x[b].qs + 32 * g);
            const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(simd_lo4(q)), simd_hi4(q), 1);
            const __m512i ctrl = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * g)))),
                _mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * g + 1))), 1);
            const __m512i sg = _mm512_shuffle_epi8(sc512, ctrl);
            _Pragma("GCC unroll 8")
            for (int j = 0; j < 8; j++)
                isum5[j] = _mm512_dpwssd_epi32(isum5[j], _mm512_maddubs_epi16(u, _mm512_loadu_si512(y[j][b].qs + 64 * g)), sg);
        }
        _Pragma("GCC unroll 8")
        for (int j = 0; j < 8; j++) {
            const __m256i isum = _mm256_add_epi32(_mm512_castsi512_si256(isum5[j]), _mm512_extracti64x4_epi64(isum5[j], 1));
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * y[j][b].d), acc[j]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int j = 0; j < 8; j++) s[j] = simd_hsum_ps(_mm256_sub_ps(acc[j], accm[j]));
}

/* Eight tokens per pass of a Q5_K row: Q4_K's eight-token form with the fifth bit of qh. */
static void SIMD_NAME(q5_k_vec_dot8_q8_k)(int64_t n, float *s, const void *vx, const void *vy, size_t ystride) {
    const block_q5_K *x = vx;
    const block_q8_K *y[8] = {Y4(0), Y4(1), Y4(2), Y4(3), Y4(4), Y4(5), Y4(6), Y4(7)};
    const __m256i sixteen = _mm256_set1_epi8(16);
    __m256 acc[8], accm[8];
    _Pragma("GCC unroll 8")
    for (int j = 0; j < 8; j++) acc[j] = accm[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        uint64_t sc8, mn8;
        simd_k4_unpack(x[b].scales, &sc8, &mn8);
        const float d = _cvtsh_ss(x[b].d), dmin = _cvtsh_ss(x[b].dmin);
        const __m256i mdup = simd_k4_mdup(mn8);
        _Pragma("GCC unroll 8")
        for (int j = 0; j < 8; j++) accm[j] = simd_k4_mins_dup(accm[j], mdup, &y[j][b], dmin);
        const __m512i sc512 = _mm512_broadcast_i64x4(simd_u8x8_i16x2(sc8));
        const __m256i qh = simd_ld(x[b].qh);
        __m512i isum5[8];
        _Pragma("GCC unroll 8")
        for (int j = 0; j < 8; j++) isum5[j] = _mm512_setzero_si512();
        for (int g = 0; g < 4; g++) {
            const __m256i q = simd_ld(x[b].qs + 32 * g);
            const __m256i b0 = _mm256_set1_epi8((char)(1 << (2 * g))), b1 = _mm256_set1_epi8((char)(2 << (2 * g)));
            const __m256i h0 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b0), b0), sixteen);
            const __m256i h1 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b1), b1), sixteen);
            const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_or_si256(simd_lo4(q), h0)),
                                                 _mm256_or_si256(simd_hi4(q), h1), 1);
            const __m512i ctrl = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * g)))),
                _mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * g + 1))), 1);
            const __m512i sg = _mm512_shuffle_epi8(sc512, ctrl);
            _Pragma("GCC unroll 8")
            for (int j = 0; j < 8; j++)
                isum5[j] = _mm512_dpwssd_epi32(isum5[j], _mm512_maddubs_epi16(u, _mm512_loadu_si512(y[j][b].qs + 64 * g)), sg);
        }
        _Pragma("GCC unroll 8")
        for (int j = 0; j < 8; j++) {
            const __m256i isum = _mm256_add_epi32(_mm512_castsi512_si256(isum5[j]), _mm512_extracti64x4_epi64(isum5[j], 1));
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * y[j][b].d), acc[j]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int j = 0; j < 8; j++) s[j] = simd_hsum_ps(_mm256_sub_ps(acc[j], accm[j]));
}

/* Eight tokens per pass of a Q6_K row, groups k and k+1 of a half side by side in one zmm (their 64
 * activation bytes are contiguous); the -32 offset through the bsums as in the 256-bit kernel. */
static void SIMD_NAME(q6_k_vec_dot8_q8_k)(int64_t n, float *s, const void *vx, const void *vy, size_t ystride) {
    const block_q6_K *x = vx;
    const block_q8_K *y[8] = {Y4(0), Y4(1), Y4(2), Y4(3), Y4(4), Y4(5), Y4(6), Y4(7)};
    __m256 acc[8];
    _Pragma("GCC unroll 8")
    for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        const __m128i s8 = _mm_loadu_si128((const __m128i *)x[b].scales);
        const __m256i s16 = _mm256_cvtepi8_epi16(s8);
        const float d = _cvtsh_ss(x[b].d);
        __m512i isum5[8];
        _Pragma("GCC unroll 8")
        for (int j = 0; j < 8; j++) isum5[j] = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++) {
            __m256i u[4];
            simd_q6_half(x[b].ql + 64 * h, x[b].qh + 32 * h, u);
            const __m512i sc512 = _mm512_broadcast_i64x4(simd_i8x8_i16x2(h ? _mm_srli_si128(s8, 8) : s8));
            for (int k = 0; k < 4; k += 2) {
                const __m512i uu = _mm512_inserti64x4(_mm512_castsi256_si512(u[k]), u[k + 1], 1);
                const __m512i ctrl = _mm512_inserti64x4(
                    _mm512_castsi256_si512(_mm256_set_m128i(_mm_set1_epi16((short)(0x0100 + 0x0202 * (2 * k + 1))),
                                                            _mm_set1_epi16((short)(0x0100 + 0x0202 * (2 * k))))),
                    _mm256_set_m128i(_mm_set1_epi16((short)(0x0100 + 0x0202 * (2 * k + 3))),
                                     _mm_set1_epi16((short)(0x0100 + 0x0202 * (2 * k + 2)))), 1);
                const __m512i sk = _mm512_shuffle_epi8(sc512, ctrl);
                _Pragma("GCC unroll 8")
                for (int j = 0; j < 8; j++)
                    isum5[j] = _mm512_dpwssd_epi32(
                        isum5[j], _mm512_maddubs_epi16(uu, _mm512_loadu_si512(y[j][b].qs + 128 * h + 32 * k)), sk);
            }
        }
        _Pragma("GCC unroll 8")
        for (int j = 0; j < 8; j++) {
            __m256i isum = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(simd_scaled_bsums(s16, &y[j][b]), 5));
            isum = _mm256_add_epi32(isum, _mm256_add_epi32(_mm512_castsi512_si256(isum5[j]), _mm512_extracti64x4_epi64(isum5[j], 1)));
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * y[j][b].d), acc[j]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int j = 0; j < 8; j++) s[j] = simd_hsum_ps(acc[j]);
}
#endif

/* ---- 32-value blocks against Q8_0 activations: Q5_0 and Q8_0 (Gemma-style files, output heads) ---- */
#define Y80(j) ((const block_q8_0 *)((const char *)vy + (size_t)(j) * ystride))

/* per token, the single-row kernel's ops: isum = |q| . (y * sign(q)), acc += isum * (dx * dy) */
#define DOT4_S8_BODY(Q)                                                                               \
    do {                                                                                              \
        const __m256i q_ = (Q), aq_ = _mm256_sign_epi8(q_, q_);                                       \
        const float dx_ = _cvtsh_ss(x[b].d);                                                          \
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {                                        \
            const __m256i isum = simd_dot_u8s8(_mm256_setzero_si256(), aq_,                           \
                                               _mm256_sign_epi8(simd_load32(y[j][b].qs), q_));        \
            acc[j] = simd_scale_acc(acc[j], isum, dx_ * _cvtsh_ss(y[j][b].d));                        \
        }                                                                                             \
    } while (0)

static void SIMD_NAME(q5_0_vec_dot4_q8_0)(int64_t n, float *s, const void *vx, const void *vy, size_t ystride) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y[4] = {Y80(0), Y80(1), Y80(2), Y80(3)};
    const __m256i sixteen = _mm256_set1_epi8(16);
    __m256 acc[4];
    _Pragma("GCC unroll 4")
    for (int j = 0; j < 4; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK5_0; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        DOT4_S8_BODY(_mm256_sub_epi8(simd_q5_values(x[b].qs, x[b].qh), sixteen));
    }
    _Pragma("GCC unroll 4")
    for (int j = 0; j < 4; j++) s[j] = simd_hsum_ps(acc[j]);
}

static void SIMD_NAME(q8_0_vec_dot4_q8_0)(int64_t n, float *s, const void *vx, const void *vy, size_t ystride) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y[4] = {Y80(0), Y80(1), Y80(2), Y80(3)};
    __m256 acc[4];
    _Pragma("GCC unroll 4")
    for (int j = 0; j < 4; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK8_0; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        DOT4_S8_BODY(simd_load32(x[b].qs));
    }
    _Pragma("GCC unroll 4")
    for (int j = 0; j < 4; j++) s[j] = simd_hsum_ps(acc[j]);
}

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
/* ---- eight packed Q8_0 activation rows (quant.h: pack8 / vec_dot8p), VNNI only ----
 * Per weight block: the signed weight bytes q once, c = -128 * (sum of each lane's 4 bytes of q) once,
 * the eight scale products dx * dy_j in one vector; per row: one vpdpbusd starting from c, which gives
 * vec_dot's own int32 lanes, then its conversion and multiply-add. (Without VNNI the byte products go
 * through pmaddubsw, whose int16 pairs would saturate on (q + 128) * w: no such kernel there.) */
static void SIMD_NAME(q8_0_pack8)(int64_t n, const void *vy, size_t ystride, void *dst) {
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    char *d = dst;
    for (int64_t b = 0; b < n / QK8_0; b++, d += 8 * 32 + 8 * sizeof(float)) {
        float *sc = (float *)(d + 8 * 32);
        for (int j = 0; j < 8; j++) {
            const block_q8_0 *y = Y80(j) + b;
            _mm256_storeu_si256((__m256i *)(d + 32 * j), _mm256_xor_si256(simd_load32(y->qs), flip));
            sc[j] = _cvtsh_ss(y->d);
        }
    }
}

#define DOT8P_BODY(Q)                                                                                 \
    do {                                                                                              \
        const __m256i q_ = (Q);                                                                       \
        const __m256i c_ = _mm256_sub_epi32(                                                          \
            _mm256_setzero_si256(),                                                                   \
            _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char)0x80), q_));           \
        const char *p_ = (const char *)pk + (size_t)b * (8 * 32 + 8 * sizeof(float));                 \
        float sc_[8];                                                                                 \
        _mm256_storeu_ps(sc_, _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(x[b].d)),                        \
                                            _mm256_loadu_ps((const float *)(p_ + 8 * 32))));          \
        _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) {                                        \
            const __m256i isum = _mm256_dpbusd_epi32(c_, simd_load32(p_ + 32 * j), q_);               \
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(sc_[j]), acc[j]);       \
        }                                                                                             \
    } while (0)

#define DOT8P_KERNEL(name, T, QEXPR)                                                                  \
    static void SIMD_NAME(name)(int64_t n, float *s, const void *vx, const void *pk) {               \
        const T *x = vx;                                                                              \
        __m256 acc[8];                                                                                \
        _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();            \
        for (int64_t b = 0; b < n / 32; b++) {                                                        \
            simd_prefetch(&x[b], (int)sizeof x[b]);                                                   \
            DOT8P_BODY(QEXPR);                                                                        \
        }                                                                                             \
        _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) s[j] = simd_hsum_ps(acc[j]);             \
    }

/* QEXPR: the signed weight values of block b, as the single-row kernels form them */
DOT8P_KERNEL(q8_0_vec_dot8p, block_q8_0, simd_load32(x[b].qs))
DOT8P_KERNEL(q4_0_vec_dot8p, block_q4_0, _mm256_sub_epi8(simd_nibbles_lo_hi(x[b].qs), _mm256_set1_epi8(8)))
DOT8P_KERNEL(q5_0_vec_dot8p, block_q5_0,
             _mm256_sub_epi8(simd_q5_values(x[b].qs, x[b].qh), _mm256_set1_epi8(16)))
DOT8P_KERNEL(iq4_nl_vec_dot8p, block_iq4_nl, _mm256_shuffle_epi8(simd_iq4nl_table(), simd_nibbles_lo_hi(x[b].qs)))
#undef DOT8P_KERNEL
#undef DOT8P_BODY
#endif

#undef DOT4_S8_BODY
#undef Y80
#undef Y4

static void SIMD_NAME(simd_x86_register_multi)(quant_table t, enum quant_isa isa) {
    t[QT_Q4_K][isa].vec_dot4 = SIMD_NAME(q4_k_vec_dot4_q8_k);
    t[QT_Q5_K][isa].vec_dot4 = SIMD_NAME(q5_k_vec_dot4_q8_k);
    t[QT_Q6_K][isa].vec_dot4 = SIMD_NAME(q6_k_vec_dot4_q8_k);
    t[QT_Q5_0][isa].vec_dot4 = SIMD_NAME(q5_0_vec_dot4_q8_0);
    t[QT_Q8_0][isa].vec_dot4 = SIMD_NAME(q8_0_vec_dot4_q8_0);
#if defined(__AVX512F__) && defined(__AVX512BW__)
    t[QT_Q4_K][isa].vec_dot8 = SIMD_NAME(q4_k_vec_dot8_q8_k);
    t[QT_Q5_K][isa].vec_dot8 = SIMD_NAME(q5_k_vec_dot8_q8_k);
    t[QT_Q6_K][isa].vec_dot8 = SIMD_NAME(q6_k_vec_dot8_q8_k);
#endif
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    t[QT_Q8_0][isa].pack8 = SIMD_NAME(q8_0_pack8);
    t[QT_Q8_0][isa].vec_dot8p = SIMD_NAME(q8_0_vec_dot8p);
    t[QT_Q4_0][isa].vec_dot8p = SIMD_NAME(q4_0_vec_dot8p);
    t[QT_Q5_0][isa].vec_dot8p = SIMD_NAME(q5_0_vec_dot8p);
    t[QT_IQ4_NL][isa].vec_dot8p = SIMD_NAME(iq4_nl_vec_dot8p);
#endif
}

#endif
