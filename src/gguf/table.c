/* table: the gguf module's two containers, an arena (the reader's parsed tables live in one, freed at
 * gguf_close) and a name index (open addressing, linear probing) used for duplicate checks and lookups by
 * the reader and the writer. See gguf_impl.h. */
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_impl.h"

/* ---- arena ---- */

struct gguf_arena_block {
    gguf_arena_block *next;
    uint64_t used, cap;
};

/* Block payloads start 16-byte aligned after the header, so every allocation (rounded to 16) is. */
#define ARENA_HDR ((sizeof(gguf_arena_block) + 15) & ~(size_t)15)
#define ARENA_BLOCK (64u << 10)

static unsigned char *block_mem(gguf_arena_block *b) { return (unsigned char *)b + ARENA_HDR; }

void *gguf_arena_alloc(gguf_arena *a, uint64_t size) {
    if (size > SIZE_MAX / 2 - ARENA_BLOCK) return NULL;
    size = (size + 15) & ~(uint64_t)15;
    gguf_arena_block *b = a->head;
    if (b && b->cap - b->used >= size) {
        void *p = block_mem(b) + b->used;
        b->used += size;
        return p;
    }
    /* Large allocations get a block of their own, linked behind the head so that the head's free room
     * stays usable for the small ones that follow. */
    uint64_t cap = size > ARENA_BLOCK / 4 ? size : ARENA_BLOCK;
    gguf_arena_block *nb = calloc(1, ARENA_HDR + (size_t)cap);
    if (!nb) return NULL;
    nb->cap = cap;
    nb->used = size;
    if (b && cap == size) {
        nb->next = b->next;
        b->next = nb;
    } else {
        nb->next = b;
        a->head = nb;
    }
    return block_mem(nb);
}

void gguf_arena_free(gguf_arena *a) {
    for (gguf_arena_block *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    a->head = NULL;
}

/* ---- index ---- */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static const char *name_at(const void *tab, size_t stride, uint64_t i) {
    const char *const *p = (const void *)((const char *)tab + i * stride);
    return *p;
}

int gguf_index_init(gguf_index *ix, uint64_t n_hint) {
    uint64_t cap = 16;
    while (cap < 2 * n_hint) cap <<= 1;
    ix->slots = calloc((size_t)cap, sizeof *ix->slots);
    ix->mask = cap - 1;
    ix->count = 0;
    return ix->slots ? 0 : ERR_NOMEM;
}

void gguf_index_free(gguf_index *ix) {
    free(ix->slots);
    ix->slots = NULL;
    ix->mask = 0;
    ix->count = 0;
}

int64_t gguf_index_find(const gguf_index *ix, const char *name, const void *tab, size_t stride) {
    if (!ix->slots) return -1;
    for (uint64_t h = hash_str(name) & ix->mask;; h = (h + 1) & ix->mask) {
        uint32_t s = ix->slots[h];
        if (s == 0) return -1;
        if (strcmp(name_at(tab, stride, s - 1), name) == 0) return s - 1;
    }
}

static void place(uint32_t *slots, uint64_t mask, uint64_t h, uint32_t v) {
    while (slots[h & mask]) h++;
    slots[h & mask] = v;
}

static int grow(gguf_index *ix, const void *tab, size_t stride) {
    uint64_t cap = (ix->mask + 1) * 2;
    uint32_t *ns = calloc((size_t)cap, sizeof *ns);
    if (!ns) return ERR_NOMEM;
    for (uint64_t k = 0; k <= ix->mask; k++)
        if (ix->slots[k]) place(ns, cap - 1, hash_str(name_at(tab, stride, ix->slots[k] - 1)), ix->slots[k]);
    free(ix->slots);
    ix->slots = ns;
    ix->mask = cap - 1;
    return 0;
}

int64_t gguf_index_insert(gguf_index *ix, uint64_t i, const void *tab, size_t stride) {
    if (!ix->slots && gguf_index_init(ix, 16) != 0) return -2;
    /* Slots hold i + 1 in 32 bits; callers cap their tables far below that (GGUF_MAX_KV, ..._TENSORS). */
    if (i >= UINT32_MAX) return -2;
    if (2 * (ix->count + 1) > ix->mask + 1 && grow(ix, tab, stride) != 0) return -2;
    const char *name = name_at(tab, stride, i);
    uint64_t h = hash_str(name) & ix->mask;
    for (;; h = (h + 1) & ix->mask) {
        uint32_t s = ix->slots[h];
        if (s == 0) break;
        if (strcmp(name_at(tab, stride, s - 1), name) == 0) return s - 1;
    }
    ix->slots[h] = (uint32_t)(i + 1);
    ix->count++;
    return -1;
}
