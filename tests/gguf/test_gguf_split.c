/* test_gguf_split: a 3-part model (NAME-0000K-of-00003.gguf, written by our writer with gguf-split's keys)
 * opens as one: metadata from part 1, tensors from all parts with their bytes, split index and file
 * sizes; and each way a split set can be broken is an error that names the file or the mismatch. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "gguf/gguf.h"
#include "gguf_bytes.h"
#include "quant/qtype.h"

static char dir[64];

static void part_path(char *buf, size_t cap, int k, int n) {
    snprintf(buf, cap, "%s/model-%05d-of-%05d.gguf", dir, k, n);
}

/* Writes part k (1-based) of n: 2 F32 tensors "t<k>.a", "t<k>.b" filled with k*100 + i; part 1 also gets
 * the model metadata. `count_says`/`no_says`/`total` are what its split keys claim; `name_b` overrides the
 * second tensor's name. */
static int write_part(int k, int n, int count_says, int no_says, int total, const char *name_b) {
    gguf_writer *w = gguf_writer_new();
    err e;
    if (k == 1) {
        gguf_writer_set_str(w, "general.architecture", "llama");
        gguf_writer_set_u32(w, "llama.block_count", 3);
    }
    gguf_writer_set_u16(w, "split.no", (uint16_t)no_says);
    gguf_writer_set_u16(w, "split.count", (uint16_t)count_says);
    gguf_writer_set_i32(w, "split.tensors.count", total);
    float data[8];
    for (int i = 0; i < 8; i++) data[i] = (float)(k * 100 + i);
    int64_t ne[] = {8};
    char na[32], nb[32];
    snprintf(na, sizeof na, "t%d.a", k);
    snprintf(nb, sizeof nb, "t%d.b", k);
    int rc = gguf_writer_add_tensor(w, na, QT_F32, 1, ne, data, &e);
    if (!rc) rc = gguf_writer_add_tensor(w, name_b ? name_b : nb, QT_F32, 1, ne, data, &e);
    char path[128];
    part_path(path, sizeof path, k, n);
    if (!rc) rc = gguf_writer_write(w, path, &e);
    gguf_writer_free(w);
    return rc;
}

static void write_good(int n) {
    for (int k = 1; k <= n; k++) CHECK(write_part(k, n, n, k - 1, 2 * n, NULL) == 0);
}

static void remove_parts(int n) {
    char p[128];
    for (int k = 1; k <= n; k++) {
        part_path(p, sizeof p, k, n);
        unlink(p);
    }
}

static void test_three_parts(void) {
    write_good(3);
    char p1[128];
    part_path(p1, sizeof p1, 1, 3);
    gguf_file *f = NULL;
    err e = {0};
    int rc = gguf_open(&f, p1, &e);
    CHECKF(rc == 0, "%s", e.msg);
    if (rc) return;
    CHECK(gguf_n_splits(f) == 3);
    CHECK(gguf_n_tensors(f) == 6);
    uint32_t blocks = 0;
    CHECK(gguf_get_u32(f, "llama.block_count", &blocks, &e) == 0 && blocks == 3);
    uint64_t total = 0;
    for (int k = 1; k <= 3; k++) {
        char p[128];
        struct stat st;
        part_path(p, sizeof p, k, 3);
        if (stat(p, &st) == 0) total += (uint64_t)st.st_size;
        for (int which = 0; which < 2; which++) {
            char name[32];
            snprintf(name, sizeof name, "t%d.%c", k, which ? 'b' : 'a');
            const gguf_tensor *t = gguf_find_tensor(f, name);
            CHECKF(t != NULL, "%s", name);
            if (!t) continue;
            CHECK(t->split == (uint32_t)(k - 1));
            float v[8];
            memcpy(v, t->data, sizeof v);
            CHECKF(v[0] == (float)(k * 100) && v[7] == (float)(k * 100 + 7), "%s data", name);
        }
    }
    CHECK(gguf_file_size(f) == total);
    CHECK(strcmp(gguf_tensor_at(f, 0)->name, "t1.a") == 0 && strcmp(gguf_tensor_at(f, 5)->name, "t3.b") == 0);
    gguf_close(f);

    /* opening a later part points at the first one */
    char p2[128];
    part_path(p2, sizeof p2, 2, 3);
    CHECK(gguf_open(&f, p2, &e) == ERR_ARG && contains(e.msg, "part 2 of 3") && contains(e.msg, "model-00001-of-00003.gguf"));
    remove_parts(3);
}

static void expect_open_fails(int code, const char *what1, const char *what2) {
    char p1[128];
    part_path(p1, sizeof p1, 1, 3);
    gguf_file *f = NULL;
    err e = {0};
    int rc = gguf_open(&f, p1, &e);
    CHECKF(rc == code && contains(e.msg, what1) && contains(e.msg, what2), "rc %d (want %d): %s", rc, code, e.msg);
    CHECK(f == NULL);
}

static void test_broken_sets(void) {
    char p3[128];
    part_path(p3, sizeof p3, 3, 3);

    write_good(3);
    unlink(p3);
    expect_open_fails(ERR_NOTFOUND, "split part 3 of 3 is missing", "model-00003-of-00003.gguf");
    remove_parts(3);

    /* part 2 claims there are 4 parts */
    write_good(3);
    CHECK(write_part(2, 3, 4, 1, 6, NULL) == 0);
    expect_open_fails(ERR_FORMAT, "split.count mismatch", "this part says 4, the first says 3");
    remove_parts(3);

    /* part 1's key disagrees with its name */
    write_good(3);
    CHECK(write_part(1, 3, 2, 0, 6, NULL) == 0);
    expect_open_fails(ERR_FORMAT, "split.count mismatch", "the file name says 3 parts but split.count is 2");
    remove_parts(3);

    /* part 3 says it is part 2 */
    write_good(3);
    CHECK(write_part(3, 3, 3, 1, 6, NULL) == 0);
    expect_open_fails(ERR_FORMAT, "split.no is 1, expected 2", "model-00003-of-00003.gguf");
    remove_parts(3);

    /* the parts hold 6 tensors but part 1 says 7 */
    write_good(3);
    CHECK(write_part(1, 3, 3, 0, 7, NULL) == 0);
    expect_open_fails(ERR_FORMAT, "split.tensors.count is 7", "hold 6 tensors");
    remove_parts(3);

    /* a tensor name used in two parts */
    write_good(3);
    CHECK(write_part(3, 3, 3, 2, 6, "t1.a") == 0);
    expect_open_fails(ERR_FORMAT, "duplicate tensor name 't1.a'", "also in split part 1");
    remove_parts(3);

    /* split.count > 1 in a file whose name does not say where the other parts are */
    gguf_writer *w = gguf_writer_new();
    gguf_writer_set_u16(w, "split.count", 2);
    char plain[128];
    snprintf(plain, sizeof plain, "%s/plain.gguf", dir);
    err e;
    CHECK(gguf_writer_write(w, plain, &e) == 0);
    gguf_writer_free(w);
    gguf_file *f = NULL;
    CHECK(gguf_open(&f, plain, &e) == ERR_FORMAT && contains(e.msg, "does not end in -00001-of-00002.gguf"));
    unlink(plain);

    /* a name that says split, but no split keys */
    w = gguf_writer_new();
    char p1[128];
    part_path(p1, sizeof p1, 1, 3);
    CHECK(gguf_writer_write(w, p1, &e) == 0);
    gguf_writer_free(w);
    CHECK(gguf_open(&f, p1, &e) == ERR_FORMAT && contains(e.msg, "has no split.count key"));
    unlink(p1);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/llm170_gguf_split_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    test_three_parts();
    test_broken_sets();
    rmdir(dir);
    return check_report("test_gguf_split");
}
