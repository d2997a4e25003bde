/* gguf_impl: what the gguf reader's files (reader.c, split.c, kv.c) share and nothing else includes.
 *
 * A gguf_file owns: one mapping per part (or a borrowed buffer for gguf_open_memory), an arena that holds
 * every parsed table (kv array, string and nested-array element tables, NUL-terminated key and tensor
 * name copies), the tensor array, and two hash indexes (keys, tensor names). gguf_close frees it all. */
#ifndef LLM170_GGUF_GGUF_IMPL_H
#define LLM170_GGUF_GGUF_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the gguf reader maps files in place and reads integers as host order: little-endian hosts only"
#endif

/* ---- arena: bump allocation of the parsed tables, freed all at once at gguf_close ---- */
typedef struct gguf_arena_block gguf_arena_block;
typedef struct gguf_arena {
    gguf_arena_block *head;
} gguf_arena;

void *gguf_arena_alloc(gguf_arena *a, uint64_t size); /* zeroed, 16-byte aligned; NULL on OOM */
void gguf_arena_free(gguf_arena *a);

/* ---- index: open addressing from a name to an array index ----
 * The table it indexes is any array of structs whose FIRST field is the NUL-terminated name
 * (gguf_kv.key, gguf_tensor.name, the writer's entries), given as base pointer + stride. */
typedef struct gguf_index {
    uint32_t *slots; /* array index + 1; 0 = empty */
    uint64_t mask;   /* capacity - 1; capacity is a power of two, kept >= 2 * count (grows on insert) */
    uint64_t count;
} gguf_index;

int gguf_index_init(gguf_index *ix, uint64_t n_hint); /* 0 or ERR_NOMEM */
void gguf_index_free(gguf_index *ix);
/* The array index of `name`, or -1. */
int64_t gguf_index_find(const gguf_index *ix, const char *name, const void *tab, size_t stride);
/* Inserts array index i (whose name is tab[i]'s); returns the index already there under that name (and
 * inserts nothing), -1 when inserted, or -2 on out of memory (growing). */
int64_t gguf_index_insert(gguf_index *ix, uint64_t i, const void *tab, size_t stride);

/* ---- the file ---- */
typedef struct gguf_part {
    const uint8_t *base; /* mapping or caller buffer */
    uint64_t size;
    bool mapped;         /* base came from mmap (unmapped at close) */
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    uint64_t n_tensors;  /* tensors of this part */
    gguf_kv *kvs;        /* this part's metadata (arena) */
    uint64_t n_kv;
} gguf_part;

struct gguf_file {
    gguf_arena arena;
    gguf_part *parts;
    uint32_t n_parts;
    gguf_tensor *tensors; /* all parts, in part order (malloc'd) */
    uint64_t n_tensors;
    gguf_index kv_index;  /* over parts[0].kvs */
    gguf_index t_index;   /* over tensors */
};

/* Parses part `part_no` (its base/size already set) into its fields, appending its tensors to f->tensors
 * and f->t_index (a tensor name already there, from this or an earlier part, is an error). */
int gguf_parse_part(gguf_file *f, uint32_t part_no, err *e);

/* Maps path read-only into p. */
int gguf_map_file(gguf_part *p, const char *path, err *e);

/* The split.count of a part (0 when absent), checked: a nonnegative integer 1..GGUF_MAX_SPLITS. `where`
 * names the part in messages. */
int gguf_split_count(const gguf_part *p, const char *where, uint64_t *count, err *e);

/* After part 0 is parsed from path: finds, maps and parses the other parts if it is a split model. */
int gguf_open_splits(gguf_file *f, const char *path, err *e);

/* Value sizes: bytes of one element of a fixed-size type, 0 for string/array/unknown. */
uint64_t gguf_vtype_size(uint32_t t);

/* Looks up key in a part's kv table by linear scan (used on parts other than the first, which have no
 * index and hold only a few keys). */
const gguf_kv *gguf_part_find_kv(const gguf_part *p, const char *key);

/* Any integer value as a signed/unsigned pair: returns false if v is not an integer type. */
bool gguf_value_as_int(const gguf_value *v, bool *neg, uint64_t *mag);

#endif
