/* qtype: the ggml tensor types as GGUF numbers them, with each type's block size and bytes per block.
 *
 * This is the one table every other module asks "how many bytes is a row of N values of type T" (the GGUF
 * reader checks tensor sizes with it). The math of each type lives in quant.h. */
#ifndef LLM170_QUANT_QTYPE_H
#define LLM170_QUANT_QTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Values are the GGUF / ggml type ids. 4, 5 (Q4_2, Q4_3) and 31-33, 36-38 (repacked types) were removed
 * from the format and are refused. */
enum qtype {
    QT_F32 = 0,
    QT_F16 = 1,
    QT_Q4_0 = 2,
    QT_Q4_1 = 3,
    QT_Q5_0 = 6,
    QT_Q5_1 = 7,
    QT_Q8_0 = 8,
    QT_Q8_1 = 9,
    QT_Q2_K = 10,
    QT_Q3_K = 11,
    QT_Q4_K = 12,
    QT_Q5_K = 13,
    QT_Q6_K = 14,
    QT_Q8_K = 15,
    QT_IQ2_XXS = 16,
    QT_IQ2_XS = 17,
    QT_IQ3_XXS = 18,
    QT_IQ1_S = 19,
    QT_IQ4_NL = 20,
    QT_IQ3_S = 21,
    QT_IQ2_S = 22,
    QT_IQ4_XS = 23,
    QT_I8 = 24,
    QT_I16 = 25,
    QT_I32 = 26,
    QT_I64 = 27,
    QT_F64 = 28,
    QT_IQ1_M = 29,
    QT_BF16 = 30,
    QT_TQ1_0 = 34,
    QT_TQ2_0 = 35,
    QT_MXFP4 = 39,
    QT_NVFP4 = 40,
    QT_Q1_0 = 41,
    QT_COUNT = 42 /* one past the largest id; not every id below it is a type */
};

typedef struct qtype_info {
    const char *name;  /* "Q4_K", as ggml and gguf-py spell it */
    int64_t blck;      /* values per block (1 for plain types) */
    size_t type_size;  /* bytes per block */
} qtype_info;

/* The info of type id t, or NULL if t is not a type we know (removed or future ids). */
const qtype_info *qtype_get(uint32_t t);

/* The type whose name is `name` (case-insensitive), or -1. */
int qtype_from_name(const char *name);

/* Bytes of a row of n values of type t, or 0 if t is unknown or n is not a multiple of its block size.
 * n must be >= 0 and small enough that the product fits (callers check that with qtype_row_bytes_ok). */
size_t qtype_row_bytes(enum qtype t, int64_t n);

/* Overflow-safe: sets *bytes to the size of n values of type t and returns true, or returns false if t is
 * unknown, n is negative or not a multiple of the block size, or the size exceeds SIZE_MAX/UINT64_MAX. */
bool qtype_nbytes(uint32_t t, int64_t n, uint64_t *bytes);

/* Names of every known type, comma separated, for error messages ("supported: F32, F16, ..."). */
const char *qtype_supported_list(void);

#endif
