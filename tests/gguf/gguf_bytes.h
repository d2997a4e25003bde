/* gguf_bytes: helpers the gguf tests share: a byte builder for hand-made (often broken) GGUF files, a
 * checked open of a buffer, and a temp dir. Header-only (static functions) because each test_*.c is its
 * own executable. A builder owns its bytes; bb_free releases them. */
#ifndef LLM170_TESTS_GGUF_BYTES_H
#define LLM170_TESTS_GGUF_BYTES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

typedef struct bb {
    uint8_t *p;
    size_t n, cap;
} bb;

static void bb_put(bb *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) abort();
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void bb_u8(bb *b, uint8_t v) { bb_put(b, &v, 1); }
static void bb_u16(bb *b, uint16_t v) { bb_put(b, &v, 2); }
static void bb_u32(bb *b, uint32_t v) { bb_put(b, &v, 4); }
static void bb_u64(bb *b, uint64_t v) { bb_put(b, &v, 8); }
static void bb_f32(bb *b, float v) { bb_put(b, &v, 4); }
static void bb_str(bb *b, const char *s) {
    bb_u64(b, strlen(s));
    bb_put(b, s, strlen(s));
}
static void bb_header(bb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    bb_put(b, "GGUF", 4);
    bb_u32(b, version);
    bb_u64(b, n_tensors);
    bb_u64(b, n_kv);
}
/* A key and its value type; the caller appends the value. */
static void bb_key(bb *b, const char *key, uint32_t type) {
    bb_str(b, key);
    bb_u32(b, type);
}
static void bb_tensor(bb *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off) {
    bb_str(b, name);
    bb_u32(b, n_dims);
    for (uint32_t j = 0; j < n_dims; j++) bb_u64(b, ne[j]);
    bb_u32(b, type);
    bb_u64(b, off);
}
static void bb_pad(bb *b, size_t align) {
    while (b->n % align) bb_u8(b, 0);
}
static void bb_free(bb *b) {
    free(b->p);
    *b = (bb){0};
}

/* Opens a COPY of b's bytes in an exactly-sized heap buffer (so that ASan sees any read past the end);
 * returns the code, fills *e; closes the file when it opened (tests of failures don't need it). */
static int open_bytes(const void *p, size_t n, err *e) {
    void *copy = malloc(n ? n : 1);
    if (n) memcpy(copy, p, n);
    gguf_file *f = NULL;
    *e = (err){0};
    int rc = gguf_open_memory(&f, copy, n, e);
    gguf_close(f);
    free(copy);
    return rc;
}

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

#endif
