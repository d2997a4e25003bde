/* split: opening a model saved in parts, NAME-00001-of-0000N.gguf ... NAME-0000N-of-0000N.gguf, as one.
 *
 * The convention is llama.cpp's gguf-split: every part carries `split.no` (0-based, u16), `split.count`
 * (u16) and `split.tensors.count` (i32, the total over all parts); the metadata lives in the first part.
 * We accept any integer type for the three keys. Checked: the first part's name and keys agree, every part
 * exists and says it is part k of the same N, and the parts together hold split.tensors.count tensors
 * with names unique across parts (the reader's tensor index spans parts). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_impl.h"

#define SPLIT_SUFFIX_LEN 20 /* "-00001-of-00003.gguf" */

static bool digits5(const char *s, unsigned *v) {
    *v = 0;
    for (int i = 0; i < 5; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        *v = *v * 10 + (unsigned)(s[i] - '0');
    }
    return true;
}

/* Whether path ends in -KKKKK-of-NNNNN.gguf; if so the prefix length, k and n. */
static bool split_name(const char *path, size_t *prefix, unsigned *k, unsigned *n) {
    size_t len = strlen(path);
    if (len < SPLIT_SUFFIX_LEN) return false;
    const char *s = path + len - SPLIT_SUFFIX_LEN;
    if (s[0] != '-' || !digits5(s + 1, k) || memcmp(s + 6, "-of-", 4) != 0 || !digits5(s + 10, n) ||
        strcmp(s + 15, ".gguf") != 0)
        return false;
    *prefix = len - SPLIT_SUFFIX_LEN;
    return true;
}

/* A split key of part p as a nonnegative integer; absent is an error naming the part. */
static int split_key(const gguf_part *p, const char *key, const char *path, uint64_t *out, err *e) {
    const gguf_kv *kv = gguf_part_find_kv(p, key);
    if (!kv) return err_set(e, ERR_FORMAT, "%s: key %s is missing (every part of a split model has it)", path, key);
    bool neg = false;
    if (!gguf_value_as_int(&kv->value, &neg, out) || neg)
        return err_set(e, ERR_FORMAT, "%s: at byte %" PRIu64 ": %s must be a nonnegative integer, found %s%s", path,
                       kv->offset, key, neg ? "a negative " : "", gguf_vtype_name(kv->value.type));
    return 0;
}

int gguf_split_count(const gguf_part *p, const char *where, uint64_t *count, err *e) {
    *count = 0;
    if (!gguf_part_find_kv(p, "split.count")) return 0;
    int rc = split_key(p, "split.count", where, count, e);
    if (rc) return rc;
    if (*count == 0 || *count > GGUF_MAX_SPLITS)
        return err_set(e, ERR_RANGE, "%s: split.count is %" PRIu64 ", expected 1..%d", where, *count, GGUF_MAX_SPLITS);
    return 0;
}

int gguf_open_splits(gguf_file *f, const char *path, err *e) {
    size_t prefix = 0;
    unsigned name_k = 0, name_n = 0;
    bool named = split_name(path, &prefix, &name_k, &name_n);
    uint64_t count, no, total;
    int rc = gguf_split_count(&f->parts[0], path, &count, e);
    if (rc) return rc;
    if (count == 0) {
        if (named && name_n > 1)
            return err_set(e, ERR_FORMAT, "%s: the name says part %u of %u of a split model, but the file has no "
                           "split.count key", path, name_k, name_n);
        return 0;
    }
    if (count == 1) return 0;
    if (!named)
        return err_set(e, ERR_FORMAT, "%s: split.count is %" PRIu64 " but the file name does not end in "
                       "-00001-of-%05" PRIu64 ".gguf, so the other parts cannot be found", path, count, count);
    if (name_n != count)
        return err_set(e, ERR_FORMAT, "%s: split.count mismatch: the file name says %u parts but split.count is %"
                       PRIu64, path, name_n, count);
    if (name_k != 1)
        return err_set(e, ERR_ARG, "%s is part %u of %u of a split model; open the first part, %.*s-00001-of-%05u.gguf",
                       path, name_k, name_n, (int)prefix, path, name_n);
    if ((rc = split_key(&f->parts[0], "split.no", path, &no, e))) return rc;
    if (no != 0)
        return err_set(e, ERR_FORMAT, "%s: split.no is %" PRIu64 ", expected 0 (split.no counts from 0)", path, no);
    if ((rc = split_key(&f->parts[0], "split.tensors.count", path, &total, e))) return rc;

    gguf_part *np = realloc(f->parts, (size_t)count * sizeof *np);
    if (!np) return err_set(e, ERR_NOMEM, "out of memory for %" PRIu64 " split parts", count);
    memset(np + 1, 0, (size_t)(count - 1) * sizeof *np);
    f->parts = np;
    size_t plen = prefix + SPLIT_SUFFIX_LEN + 1;
    char *pp = malloc(plen);
    if (!pp) return err_set(e, ERR_NOMEM, "out of memory");
    for (uint32_t k = 1; k < count && !rc; k++) {
        snprintf(pp, plen, "%.*s-%05u-of-%05u.gguf", (int)prefix, path, k + 1, (unsigned)count);
        gguf_part *p = &f->parts[k];
        rc = gguf_map_file(p, pp, e);
        if (rc == ERR_NOTFOUND) {
            rc = err_set(e, ERR_NOTFOUND, "split part %u of %" PRIu64 " is missing: %s (opened %s)", k + 1, count,
                         pp, path);
            break;
        }
        /* Counted as soon as it is mapped, so gguf_close unmaps it even if parsing fails. */
        f->n_parts = k + 1;
        if (rc) break;
        if ((rc = gguf_parse_part(f, k, e))) {
            err_wrap(e, "%s", pp);
            break;
        }
        uint64_t pc, pn;
        if ((rc = split_key(p, "split.count", pp, &pc, e)) || (rc = split_key(p, "split.no", pp, &pn, e))) break;
        if (pc != count)
            rc = err_set(e, ERR_FORMAT, "%s: split.count mismatch: this part says %" PRIu64 ", the first says %" PRIu64,
                         pp, pc, count);
        else if (pn != k)
            rc = err_set(e, ERR_FORMAT, "%s: split.no is %" PRIu64 ", expected %u (part %u of %" PRIu64 ")", pp, pn, k,
                         k + 1, count);
    }
    free(pp);
    if (rc) return rc;
    if (f->n_tensors != total)
        return err_set(e, ERR_FORMAT, "%s: split.tensors.count is %" PRIu64 " but the %" PRIu64
                       " parts hold %" PRIu64 " tensors", path, total, count, f->n_tensors);
    return 0;
}
