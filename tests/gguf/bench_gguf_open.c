/* bench_gguf_open: how long gguf_open + reading all metadata takes on a big file, and how much of the file
 * that pulls into memory. Not a CTest test (it needs a multi-GB file); build and run by hand:
 *
 *   cc -O2 -D_GNU_SOURCE -Isrc tests/gguf/bench_gguf_open.c build/libllm170core.a -lm -lpthread -o /tmp/bench_gguf_open
 *   /tmp/bench_gguf_open write /path/big.gguf 16     # a llama-like 16 GB file: 128k vocab, 400 tensors, zeros
 *   /tmp/bench_gguf_open time /path/big.gguf 5       # 5 cold runs (page cache dropped for the file) and 5 warm
 *
 * "cold" drops the file's pages with posix_fadvise(DONTNEED) before each run (the file is clean after the
 * writer's fsync, so this evicts it); resident pages after a run are counted with mincore. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "quant/qtype.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fill_zero(void *ctx, void *buf, uint64_t offset, uint64_t nbytes, err *e) {
    (void)ctx, (void)offset, (void)e;
    memset(buf, 0, nbytes);
    return 0;
}

static int write_big(const char *path, double gb) {
    gguf_writer *w = gguf_writer_new();
    err e;
    enum { VOCAB = 128000 };
    static char tok[VOCAB][16];
    static const char *toks[VOCAB];
    static float scores[VOCAB];
    static int32_t types[VOCAB];
    for (int i = 0; i < VOCAB; i++) {
        snprintf(tok[i], sizeof tok[i], "tok_%d", i);
        toks[i] = tok[i];
        scores[i] = -(float)i;
        types[i] = 1;
    }
    gguf_writer_set_str(w, "general.architecture", "llama");
    gguf_writer_set_str(w, "general.name", "bench-16g");
    gguf_writer_set_u32(w, "llama.block_count", 40);
    gguf_writer_set_u32(w, "llama.context_length", 8192);
    gguf_writer_set_u32(w, "llama.embedding_length", 5120);
    gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, VOCAB);
    gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_FLOAT32, scores, VOCAB);
    gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_INT32, types, VOCAB);
    /* 40 blocks x 10 tensors of Q4_K, sized so that the total is ~gb GB */
    uint64_t per = (uint64_t)(gb * 1e9 / 400);
    int64_t ne0 = 5120, ne1 = (int64_t)(per / (5120 / 256 * 144));
    for (int b = 0; b < 40; b++)
        for (int k = 0; k < 10; k++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.w%d.weight", b, k);
            int64_t ne[] = {ne0, ne1};
            if (gguf_writer_add_tensor_fill(w, name, QT_Q4_K, 2, ne, fill_zero, NULL, &e)) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
            }
        }
    double t0 = now();
    int rc = gguf_writer_write(w, path, &e);
    if (rc) fprintf(stderr, "%s\n", e.msg);
    else printf("wrote %s in %.1f s\n", path, now() - t0);
    gguf_writer_free(w);
    return rc != 0;
}

/* Reads every key with the accessor of its type (every string of every array too) and every tensor info. */
static uint64_t walk(const gguf_file *f) {
    uint64_t sum = 0;
    err e;
    for (uint64_t i = 0; i < gguf_n_kv(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        gguf_array a;
        gguf_str s;
        uint64_t u;
        float x;
        if (gguf_get_arr(f, kv->key, -1, &a, &e) == 0) {
            if (a.type == GGUF_STRING)
                for (uint64_t j = 0; j < a.n; j++) sum += a.strs[j].len + (a.strs[j].len ? (uint8_t)a.strs[j].ptr[0] : 0);
            else if (a.n && a.data) sum += ((const uint8_t *)a.data)[a.n - 1];
        } else if (gguf_get_str(f, kv->key, &s, &e) == 0) sum += s.len;
        else if (gguf_get_u64(f, kv->key, &u, &e) == 0) sum += u;
        else if (gguf_get_f32(f, kv->key, &x, &e) == 0) sum += (uint64_t)x;
    }
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) sum += gguf_tensor_at(f, i)->nbytes;
    return sum;
}

static uint64_t resident_bytes(const char *path) {
    int fd = open(path, O_RDONLY);
    struct stat st;
    fstat(fd, &st);
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    long pg = sysconf(_SC_PAGESIZE);
    size_t np = ((size_t)st.st_size + (size_t)pg - 1) / (size_t)pg;
    unsigned char *vec = malloc(np);
    uint64_t n = 0;
    if (m != MAP_FAILED && mincore(m, (size_t)st.st_size, vec) == 0)
        for (size_t i = 0; i < np; i++) n += vec[i] & 1;
    munmap(m, (size_t)st.st_size);
    free(vec);
    close(fd);
    return n * (uint64_t)pg;
}

static void drop_cache(const char *path) {
    int fd = open(path, O_RDONLY);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int time_open(const char *path, int reps) {
    for (int cold = 1; cold >= 0; cold--) {
        double t[64];
        uint64_t res = 0, sum = 0;
        for (int r = 0; r < reps && r < 64; r++) {
            if (cold) drop_cache(path);
            double t0 = now();
            gguf_file *f;
            err e;
            if (gguf_open(&f, path, &e)) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
            }
            sum += walk(f);
            t[r] = now() - t0;
            if (r == 0) printf("%s: %.2f GB, %llu keys, %llu tensors, data section at byte %llu\n", path,
                               (double)gguf_file_size(f) / 1e9, (unsigned long long)gguf_n_kv(f),
                               (unsigned long long)gguf_n_tensors(f), (unsigned long long)gguf_data_offset(f));
            gguf_close(f);
            res = resident_bytes(path);
        }
        qsort(t, (size_t)reps, sizeof *t, cmp_d);
        printf("%s cache: open + walk all metadata: median %.2f ms (min %.2f, max %.2f) over %d runs; "
               "file bytes resident after a run: %.2f MB (checksum %llu)\n", cold ? "cold" : "warm", 1e3 * t[reps / 2],
               1e3 * t[0], 1e3 * t[reps - 1], reps, (double)res / 1e6, (unsigned long long)sum);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "write") == 0) return write_big(argv[2], atof(argv[3]));
    if (argc == 4 && strcmp(argv[1], "time") == 0) return time_open(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: %s write PATH GB | time PATH REPS\n", argv[0]);
    return 2;
}
