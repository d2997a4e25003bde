/* refio: reads llm170 golden reference files ("L170REF1", written by scripts/fixtures/refio.py, which
 * documents the layout): a token stream, logits at every position, and named extra records.
 * The whole file is read into memory; every size is checked against the bytes present. */
#ifndef LLM170_TESTS_REFIO_H
#define LLM170_TESTS_REFIO_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm170.h"

typedef struct ref_record {
    char name[64];
    uint32_t dtype; /* 0 f32, 1 i32 */
    uint32_t ndim, dims[4];
    const void *data;
} ref_record;

typedef struct ref_file {
    char arch[17];
    uint32_t n_vocab, n_embd, n_prompt, n_gen, n_records;
    const int32_t *tokens;  /* n_prompt + n_gen */
    const float *logits;    /* (n_prompt + n_gen) x n_vocab */
    ref_record rec[32];
    unsigned char *buf;
} ref_file;

static inline const ref_record *ref_find(const ref_file *r, const char *name) {
    for (uint32_t i = 0; i < r->n_records; i++)
        if (!strcmp(r->rec[i].name, name)) return &r->rec[i];
    return NULL;
}

/* Returns 0, or -1 with a message on stderr. */
static inline int ref_read(ref_file *r, const char *path) {
    memset(r, 0, sizeof *r);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open (regenerate with scripts/fixtures/make_qwen35_fixtures.py)\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    r->buf = malloc((size_t)size);
    if (!r->buf || fread(r->buf, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        fprintf(stderr, "%s: read failed\n", path);
        return -1;
    }
    fclose(f);
    const unsigned char *p = r->buf;
    uint32_t version, hdr;
    if (size < 64 || memcmp(p, "L170REF1", 8)) goto bad;
    memcpy(&version, p + 8, 4);
    memcpy(&hdr, p + 12, 4);
    if (version != 1 || hdr != 64) {
        fprintf(stderr, "%s: reference format version %u, this test reads version 1\n", path, version);
        return -1;
    }
    memcpy(r->arch, p + 16, 16);
    memcpy(&r->n_vocab, p + 32, 4);
    memcpy(&r->n_embd, p + 36, 4);
    memcpy(&r->n_prompt, p + 40, 4);
    memcpy(&r->n_gen, p + 44, 4);
    memcpy(&r->n_records, p + 48, 4);
    uint64_t n = r->n_prompt + r->n_gen, off = 64;
    if (r->n_records > 32 || off + n * 4 + n * r->n_vocab * 4 > (uint64_t)size) goto bad;
    r->tokens = (const int32_t *)(p + off);
    off += n * 4;
    r->logits = (const float *)(p + off);
    off += n * r->n_vocab * 4;
    for (uint32_t i = 0; i < r->n_records; i++) {
        ref_record *rc = &r->rec[i];
        uint32_t len;
        if (off + 4 > (uint64_t)size) goto bad;
        memcpy(&len, p + off, 4);
        off += 4;
        if (len >= sizeof rc->name || off + len > (uint64_t)size) goto bad;
        memcpy(rc->name, p + off, len);
        off += (len + 3) / 4 * 4;
        if (off + 8 > (uint64_t)size) goto bad;
        memcpy(&rc->dtype, p + off, 4);
        memcpy(&rc->ndim, p + off + 4, 4);
        off += 8;
        if (rc->ndim < 1 || rc->ndim > 4 || off + 4 * rc->ndim > (uint64_t)size) goto bad;
        uint64_t count = 1;
        for (uint32_t d = 0; d < rc->ndim; d++) {
            memcpy(&rc->dims[d], p + off, 4);
            off += 4;
            count *= rc->dims[d];
        }
        if (off + count * 4 > (uint64_t)size) goto bad;
        rc->data = p + off;
        off += count * 4;
    }
    return 0;
bad:
    fprintf(stderr, "%s: malformed reference file\n", path);
    return -1;
}

static inline void ref_free(ref_file *r) { free(r->buf); }

/* The golden tests' error measure for one row of logits: max_i |ours_i - ref_i| / max_i |ref_i| (NaN in ours
 * propagates, so it fails any tolerance). */
static inline float ref_row_err(const float *ours, const float *ref, int n) {
    float num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        float d = fabsf(ours[i] - ref[i]);
        if (!(d <= num)) num = d;
        if (fabsf(ref[i]) > den) den = fabsf(ref[i]);
    }
    return num / (den > 0 ? den : 1);
}

/* The records batch0/batch1 (.tokens, .logits): both prompts decoded as one batch of sequences 0 and 1 of c
 * (sequence 0 is reset first; both must be empty otherwise). *worst gets the largest ref_row_err; -1 if the
 * records are missing or the decode fails. */
static inline int ref_batch_err(llm170_context *c, const ref_file *r, float *worst) {
    const ref_record *bt[2] = {ref_find(r, "batch0.tokens"), ref_find(r, "batch1.tokens")};
    const ref_record *bl[2] = {ref_find(r, "batch0.logits"), ref_find(r, "batch1.logits")};
    *worst = 0;
    if (!bt[0] || !bt[1] || !bl[0] || !bl[1]) return -1;
    llm170_seq_reset(c, 0);
    llm170_seq_batch two[2];
    for (int q = 0; q < 2; q++)
        two[q] = (llm170_seq_batch){.seq = q, .n_tokens = (int)bt[q]->dims[0], .tokens = bt[q]->data, .all_logits = true};
    if (llm170_decode(c, two, 2)) return -1;
    for (int q = 0, row = 0; q < 2; q++)
        for (uint32_t t = 0; t < bt[q]->dims[0]; t++, row++) {
            float e = ref_row_err(llm170_logits(c, row), (const float *)bl[q]->data + (size_t)t * r->n_vocab,
                                  (int)r->n_vocab);
            if (!(e <= *worst)) *worst = e;
        }
    return 0;
}

#endif
