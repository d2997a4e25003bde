#include "quant/qtype.h"

#include <strings.h>

/* Block sizes and bytes per block as ggml defines them. Q8_1 is 36 bytes in ggml (two halves and 32
 * int8); gguf-py's table says 40 (an older float layout); Q8_1 is only an activation format and never
 * appears in files. */
static const qtype_info infos[QT_COUNT] = {
    [QT_F32] = {"F32", 1, 4},
    [QT_F16] = {"F16", 1, 2},
    [QT_Q4_0] = {"Q4_0", 32, 18},
    [QT_Q4_1] = {"Q4_1", 32, 20},
    [QT_Q5_0] = {"Q5_0", 32, 22},
    [QT_Q5_1] = {"Q5_1", 32, 24},
    [QT_Q8_0] = {"Q8_0", 32, 34},
    [QT_Q8_1] = {"Q8_1", 32, 36},
    [QT_Q2_K] = {"Q2_K", 256, 84},
    [QT_Q3_K] = {"Q3_K", 256, 110},
    [QT_Q4_K] = {"Q4_K", 256, 144},
    [QT_Q5_K] = {"Q5_K", 256, 176},
    [QT_Q6_K] = {"Q6_K", 256, 210},
    [QT_Q8_K] = {"Q8_K", 256, 292},
    [QT_IQ2_XXS] = {"IQ2_XXS", 256, 66},
    [QT_IQ2_XS] = {"IQ2_XS", 256, 74},
    [QT_IQ3_XXS] = {"IQ3_XXS", 256, 98},
    [QT_IQ1_S] = {"IQ1_S", 256, 50},
    [QT_IQ4_NL] = {"IQ4_NL", 32, 18},
    [QT_IQ3_S] = {"IQ3_S", 256, 110},
    [QT_IQ2_S] = {"IQ2_S", 256, 82},
    [QT_IQ4_XS] = {"IQ4_XS", 256, 136},
    [QT_I8] = {"I8", 1, 1},
    [QT_I16] = {"I16", 1, 2},
    [QT_I32] = {"I32", 1, 4},
    [QT_I64] = {"I64", 1, 8},
    [QT_F64] = {"F64", 1, 8},
    [QT_IQ1_M] = {"IQ1_M", 256, 56},
    [QT_BF16] = {"BF16", 1, 2},
    [QT_TQ1_0] = {"TQ1_0", 256, 54},
    [QT_TQ2_0] = {"TQ2_0", 256, 66},
    [QT_MXFP4] = {"MXFP4", 32, 17},
    [QT_NVFP4] = {"NVFP4", 64, 36},
    [QT_Q1_0] = {"Q1_0", 128, 18},
};

const qtype_info *qtype_get(uint32_t t) {
    if (t >= QT_COUNT || infos[t].name == NULL) return NULL;
    return &infos[t];
}

int qtype_from_name(const char *name) {
    for (int t = 0; t < QT_COUNT; t++)
        if (infos[t].name && strcasecmp(infos[t].name, name) == 0) return t;
    return -1;
}

bool qtype_nbytes(uint32_t t, int64_t n, uint64_t *bytes) {
    const qtype_info *in = qtype_get(t);
    if (!in || n < 0 || n % in->blck != 0) return false;
    uint64_t blocks = (uint64_t)(n / in->blck);
    if (blocks != 0 && in->type_size > UINT64_MAX / blocks) return false;
    uint64_t b = blocks * in->type_size;
    if (b > SIZE_MAX) return false;
    *bytes = b;
    return true;
}

size_t qtype_row_bytes(enum qtype t, int64_t n) {
    uint64_t b;
    return qtype_nbytes((uint32_t)t, n, &b) ? (size_t)b : 0;
}

const char *qtype_supported_list(void) {
    return "F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ2_XXS, IQ2_XS, IQ3_XXS, IQ1_S, IQ4_NL, IQ3_S, IQ2_S, IQ4_XS, I8, I16, I32, I64, F64, IQ1_M, BF16, TQ1_0, TQ2_0, MXFP4, NVFP4, Q1_0";
}
