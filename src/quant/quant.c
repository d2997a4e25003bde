/* quant: the dispatch table over types and ISAs, and run-time CPU detection. */
#include "quant/quant.h"

#include <pthread.h>

#include "quant/quant_impl.h"

static quant_table table;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void) {
    quant_register_legacy(table);
    quant_register_kquants(table);
    quant_register_iquants(table);
#if LLM170_HAVE_X86_SIMD
    /* the registration functions are compiled with their ISA's flags (the compiler may use its wide
     * registers to fill the table): call them only on a CPU that has the ISA */
    if (quant_isa_available(QUANT_ISA_AVX2)) quant_register_avx2(table);
    if (quant_isa_available(QUANT_ISA_AVX512)) quant_register_avx512(table);
#endif
#if LLM170_HAVE_NEON
    quant_register_neon(table);
#endif
}

const char *quant_isa_name(enum quant_isa isa) {
    switch (isa) {
    case QUANT_ISA_SCALAR: return "scalar";
    case QUANT_ISA_AVX2: return "avx2";
    case QUANT_ISA_AVX512: return "avx512";
    case QUANT_ISA_NEON: return "neon";
    case QUANT_ISA_COUNT: break;
    }
    return "?";
}

bool quant_isa_available(enum quant_isa isa) {
    switch (isa) {
    case QUANT_ISA_SCALAR: return true;
#if LLM170_HAVE_X86_SIMD
    case QUANT_ISA_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2");
    case QUANT_ISA_AVX512:
        __builtin_cpu_init();
        return quant_isa_available(QUANT_ISA_AVX2) && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
#endif
#if LLM170_HAVE_NEON
    case QUANT_ISA_NEON: return true;
#endif
    default: return false;
    }
}

enum quant_isa quant_isa_best(void) {
    if (quant_isa_available(QUANT_ISA_AVX512)) return QUANT_ISA_AVX512;
    if (quant_isa_available(QUANT_ISA_AVX2)) return QUANT_ISA_AVX2;
    if (quant_isa_available(QUANT_ISA_NEON)) return QUANT_ISA_NEON;
    return QUANT_ISA_SCALAR;
}

const quant_ops *quant_ops_get(enum qtype t, enum quant_isa isa) {
    if (!qtype_get((uint32_t)t) || (unsigned)isa >= QUANT_ISA_COUNT || !quant_isa_available(isa)) return NULL;
    pthread_once(&table_once, table_init);
    return &table[t][isa];
}

size_t quant_pack8_bytes(int64_t n) { return (size_t)(n / 32) * (8 * 32 + 8 * sizeof(float)); }

quant_ops quant_ops_best(enum qtype t) {
    quant_ops out = {0};
    const quant_ops *s = quant_ops_get(t, QUANT_ISA_SCALAR);
    if (!s) return out;
    out = *s;
    /* Walk from the widest ISA down so that AVX-512 wins over AVX2 member by member. */
    static const enum quant_isa order[] = {QUANT_ISA_NEON, QUANT_ISA_AVX2, QUANT_ISA_AVX512};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const quant_ops *o = quant_ops_get(t, order[i]);
        if (!o) continue;
        if (o->to_float) out.to_float = o->to_float;
        if (o->from_float) out.from_float = o->from_float;
        if (o->u8.to_u8) out.u8.to_u8 = o->u8.to_u8; /* same values whatever the ISA: exact integers */
        if (o->vec_dot) {
            out.vec_dot = o->vec_dot;
            out.vec_dot_type = o->vec_dot_type;
            out.vec_dot4 = o->vec_dot4; /* only with its own ISA's vec_dot: they must agree bit for bit */
            out.vec_dot8 = o->vec_dot8;
            out.vec_dotn = o->vec_dotn;
            out.vec_dot8p = o->vec_dot8p;
        }
        if (o->pack8) out.pack8 = o->pack8;
    }
    return out;
}
