/* gguf: read (memory-mapped) and write GGUF v3 files.
 *
 * The format, as this reader checks it (all integers little-endian):
 *   1. magic "GGUF" (4 bytes), version (u32; only 3 is accepted: 1 and 2 are refused by name)
 *   2. n_tensors (u64), n_kv (u64)
 *   3. n_kv key/value pairs: key (gguf string), value type (u32), value
 *      gguf string = length (u64) + bytes (UTF-8, no NUL)
 *      value = one of the 13 types below; an array is element type (u32) + count (u64) + elements, and
 *      its elements may themselves be arrays (nesting is capped, see GGUF_MAX_DEPTH)
 *   4. n_tensors tensor infos: name (gguf string), n_dims (u32, 1..4), ne[n_dims] (u64 each, ne[0] is the
 *      fastest-varying dimension), type (u32, a ggml type id), offset (u64, relative to the data section,
 *      a multiple of the alignment)
 *   5. padding to `general.alignment` (u32 key; default 32; must be a power of two)
 *   6. the data section: each tensor's bytes at its offset
 * The file is hostile input: every length, count and offset is checked with overflow-safe arithmetic
 * against the bytes that remain and against the caps below; tensor data must lie inside the file, be
 * aligned, and not overlap another tensor. Errors name the byte offset and what was expected.
 *
 * Split files: a model saved as NAME-00001-of-0000N.gguf ... NAME-0000N-of-0000N.gguf is opened as one
 * (open the first part; `split.count`, `split.no` and `split.tensors.count` are checked, every part must
 * be present). Metadata comes from the first part; tensors from all parts.
 *
 * Ownership: a gguf_file owns its mappings and parsed tables; every pointer it hands out (strings,
 * arrays, tensor data) is valid until gguf_close. Strings are NOT NUL-terminated (use gguf_str's len);
 * keys and tensor names are also available as C strings (they are copied at open). */
#ifndef LLM170_GGUF_GGUF_H
#define LLM170_GGUF_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Caps, chosen well above anything published models need, so that a hostile count cannot make us
 * allocate or loop without bound. */
#define GGUF_MAX_DEPTH 8                  /* arrays nested in arrays */
#define GGUF_MAX_STRING (1ull << 30)      /* bytes in one string (a chat template is ~10 KB) */
#define GGUF_MAX_KEY 65535ull             /* bytes in one key or tensor name */
#define GGUF_MAX_KV (1ull << 20)          /* key/value pairs */
#define GGUF_MAX_TENSORS (1ull << 20)     /* tensors in one file (a 1T MoE has ~100k) */
#define GGUF_MAX_ARRAY (1ull << 32)       /* elements in one array (a vocab is ~260k) */
#define GGUF_MAX_SPLITS 512               /* parts of a split model */
#define GGUF_MAX_DIMS 4
#define GGUF_DEFAULT_ALIGNMENT 32

enum gguf_vtype {
    GGUF_UINT8 = 0,
    GGUF_INT8 = 1,
    GGUF_UINT16 = 2,
    GGUF_INT16 = 3,
    GGUF_UINT32 = 4,
    GGUF_INT32 = 5,
    GGUF_FLOAT32 = 6,
    GGUF_BOOL = 7,
    GGUF_STRING = 8,
    GGUF_ARRAY = 9,
    GGUF_UINT64 = 10,
    GGUF_INT64 = 11,
    GGUF_FLOAT64 = 12,
    GGUF_VTYPE_COUNT
};

/* "uint8", ..., "float64"; "?" for unknown */
const char *gguf_vtype_name(uint32_t t);

typedef struct gguf_str {
    const char *ptr; /* not NUL-terminated */
    uint64_t len;
} gguf_str;

typedef struct gguf_value gguf_value;

typedef struct gguf_array {
    enum gguf_vtype type;   /* element type */
    uint64_t n;             /* element count */
    const void *data;       /* fixed-size element types: the raw little-endian elements, n * size bytes */
    const gguf_str *strs;   /* type GGUF_STRING: n strings */
    const gguf_value *arrs; /* type GGUF_ARRAY: n values, each of type GGUF_ARRAY */
} gguf_array;

struct gguf_value {
    enum gguf_vtype type;
    union {
        uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
        uint64_t u64; int64_t i64; float f32; double f64; bool b;
        gguf_str str;
        gguf_array arr;
    } v;
};

typedef struct gguf_kv {
    const char *key;  /* NUL-terminated copy */
    gguf_value value;
    uint64_t offset;  /* byte offset of the key in its file (for messages) */
} gguf_kv;

typedef struct gguf_tensor {
    const char *name;          /* NUL-terminated copy */
    uint32_t type;             /* enum qtype */
    uint32_t n_dims;           /* 1..4 */
    int64_t ne[GGUF_MAX_DIMS]; /* ne[0] fastest; unused dims are 1 */
    int64_t n_elements;
    uint64_t offset;           /* in its file's data section */
    uint64_t nbytes;
    uint32_t split;            /* which part of a split model holds it (0 for single files) */
    const void *data;          /* mapped bytes (read-only), nbytes long */
} gguf_tensor;

typedef struct gguf_file gguf_file;

/* Opens path (and, if it is the first part of a split model, the other parts). No tensor data is read:
 * opening a 16 GB file touches only its header pages. Returns 0 or a negative err code. */
int gguf_open(gguf_file **out, const char *path, err *e);

/* Same, over a caller-owned buffer (tests and fuzzing); buf must outlive the gguf_file. */
int gguf_open_memory(gguf_file **out, const void *buf, size_t size, err *e);

void gguf_close(gguf_file *f);

uint32_t gguf_version(const gguf_file *f);
uint32_t gguf_alignment(const gguf_file *f);
uint32_t gguf_n_splits(const gguf_file *f);
uint64_t gguf_file_size(const gguf_file *f);     /* sum over all parts */
uint64_t gguf_data_offset(const gguf_file *f);   /* of the first part */

/* Metadata */
uint64_t gguf_n_kv(const gguf_file *f);
const gguf_kv *gguf_kv_at(const gguf_file *f, uint64_t i);
const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key); /* NULL if absent */

/* Typed accessors. Each returns 0 and sets *out, ERR_NOTFOUND if the key is absent (message names it),
 * or ERR_FORMAT if the value has another type or does not fit (message names key, expected and found).
 * Integer getters accept any integer type whose value fits the requested one; float getters accept
 * float32 and float64; bool accepts bool only. */
int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out, err *e);
int gguf_get_i32(const gguf_file *f, const char *key, int32_t *out, err *e);
int gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out, err *e);
int gguf_get_i64(const gguf_file *f, const char *key, int64_t *out, err *e);
int gguf_get_f32(const gguf_file *f, const char *key, float *out, err *e);
int gguf_get_bool(const gguf_file *f, const char *key, bool *out, err *e);
int gguf_get_str(const gguf_file *f, const char *key, gguf_str *out, err *e);
/* Array getter; `type` is the required element type (or -1 for any). */
int gguf_get_arr(const gguf_file *f, const char *key, int type, gguf_array *out, err *e);

/* Convenience: a string value copied into buf as a C string (truncation is an ERR_RANGE). */
int gguf_get_cstr(const gguf_file *f, const char *key, char *buf, size_t cap, err *e);

/* Tensors */
uint64_t gguf_n_tensors(const gguf_file *f);
const gguf_tensor *gguf_tensor_at(const gguf_file *f, uint64_t i);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name); /* NULL if absent */

/* ---- Writer -------------------------------------------------------------------------------------------
 * Builds a GGUF v3 file: metadata in insertion order, then tensor infos, then data, each tensor aligned.
 * Tensor data is either copied from a caller buffer at add time (small tensors, tests) or produced by a
 * callback while writing (multi-GB synthetic weights), so the writer never holds a whole model. */
typedef struct gguf_writer gguf_writer;

/* Fills buf[0..nbytes) with the next bytes of a tensor whose data starts `offset` bytes before them. */
typedef int (*gguf_fill_fn)(void *ctx, void *buf, uint64_t offset, uint64_t nbytes, err *e);

gguf_writer *gguf_writer_new(void); /* NULL on out of memory */
void gguf_writer_free(gguf_writer *w);

/* Each setter replaces an existing key of the same name. Return 0 or a negative err code. */
int gguf_writer_set_u8(gguf_writer *w, const char *key, uint8_t v);
int gguf_writer_set_i8(gguf_writer *w, const char *key, int8_t v);
int gguf_writer_set_u16(gguf_writer *w, const char *key, uint16_t v);
int gguf_writer_set_i16(gguf_writer *w, const char *key, int16_t v);
int gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v);
int gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v);
int gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v);
int gguf_writer_set_i64(gguf_writer *w, const char *key, int64_t v);
int gguf_writer_set_f32(gguf_writer *w, const char *key, float v);
int gguf_writer_set_f64(gguf_writer *w, const char *key, double v);
int gguf_writer_set_bool(gguf_writer *w, const char *key, bool v);
int gguf_writer_set_str(gguf_writer *w, const char *key, const char *v);
/* Array of n fixed-size elements of `type` (raw little-endian bytes are copied). */
int gguf_writer_set_arr(gguf_writer *w, const char *key, enum gguf_vtype type, const void *data, uint64_t n);
/* Array of n C strings. */
int gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs, uint64_t n);
/* Any value, deep-copied (e.g. from a reader's gguf_kv, arrays of arrays included). */
int gguf_writer_set_value(gguf_writer *w, const char *key, const gguf_value *v);

/* Sets general.alignment (power of two); default 32. */
int gguf_writer_set_alignment(gguf_writer *w, uint32_t alignment);

/* Adds a tensor with n_dims dims ne[0..n_dims) of `type`; data (nbytes = its exact size) is copied. */
int gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                           const int64_t *ne, const void *data, err *e);
/* Adds a tensor whose bytes `fill` produces while writing (ctx must live until gguf_writer_write). */
int gguf_writer_add_tensor_fill(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                const int64_t *ne, gguf_fill_fn fill, void *ctx, err *e);

/* Writes the file (to path + ".tmp", then renamed). Returns 0 or a negative err code. */
int gguf_writer_write(gguf_writer *w, const char *path, err *e);

#endif
