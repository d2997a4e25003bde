/* cmd_quant_bench: `llm170 quant-bench`, single-thread throughput of the quant kernels per type and ISA.
 *
 * What it measures, for each type: a weight buffer of --mb MiB (default 64: larger than the L2 and the
 * L3 slice of one core, so rows stream from memory as in a real matmul) is split in rows of --n values
 * (default 4096). "dequant" runs to_float over every row into one reused float row (which stays in L1);
 * "dot" runs vec_dot of every row against one activation row already quantized to the type's
 * vec_dot_type (as a matrix-vector product does). Throughput is quantized weight bytes per second, so
 * types of different sizes compare by how close they get to memory bandwidth; ns/row is the time per
 * row. Each figure is the median of --reps passes over the whole buffer, after one warm-up pass.
 *
 * Columns for an ISA show "-" where that ISA has no variant of the member (quant_ops_get gives NULL);
 * --isa best uses quant_ops_best (the fastest member per operation). Output is a markdown table, preceded
 * by the conditions (CPU, compiler, load) so a pasted table says where it came from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/timer.h"
#include "cli/cli.h"
#include "cli/quant_bench_mm.h"
#include "quant/qtype.h"
#include "quant/quant.h"

#define MAX_TYPES 32
#define MAX_REPS 101

static const enum qtype default_types[] = {QT_F32,  QT_F16,  QT_BF16, QT_Q4_0,   QT_Q4_1, QT_Q5_0,
                                           QT_Q5_1, QT_Q8_0, QT_Q2_K, QT_Q3_K,   QT_Q4_K, QT_Q5_K,
                                           QT_Q6_K, QT_IQ4_NL, QT_IQ4_XS};

typedef struct bench_opts {
    enum qtype types[MAX_TYPES];
    int ntypes;
    int isa;        /* an enum quant_isa, or ISA_ALL / ISA_BEST */
    double mb;      /* weight buffer size in MiB */
    int64_t n;      /* values per row */
    int reps;
    int tokens[16]; /* --tokens: the matrix-product mode (quant_bench_mm.c) */
    int ntokens;
    bool mb_set;
} bench_opts;

enum { ISA_ALL = -1, ISA_BEST = -2 };

static int usage(const char *msg) {
    if (msg) fprintf(stderr, "quant-bench: %s\n", msg);
    fprintf(stderr, "usage: llm170 quant-bench [--type T,...] [--isa scalar|avx2|avx512|neon|best|all] [--mb N]\n"
                    "                          [--n VALUES_PER_ROW] [--reps N] [--tokens T,...]\n"
                    "defaults: the 15 types with a dot product, --isa all, --mb 64, --n 4096, --reps 5\n"
                    "--tokens: matrix products with T tokens instead (row-by-row kernels vs int8 products; --mb 4)\n");
    return 2;
}

static int parse_types(char *list, bench_opts *o) {
    o->ntypes = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int t = qtype_from_name(tok);
        if (t < 0) {
            fprintf(stderr, "quant-bench: unknown type '%s' (supported: %s)\n", tok, qtype_supported_list());
            return 2;
        }
        if (o->ntypes == MAX_TYPES) return usage("too many types");
        o->types[o->ntypes++] = (enum qtype)t;
    }
    return o->ntypes ? 0 : usage("--type needs at least one type");
}

static int parse_args(int argc, char **argv, bench_opts *o) {
    memcpy(o->types, default_types, sizeof default_types);
    o->ntypes = (int)(sizeof default_types / sizeof default_types[0]);
    o->isa = ISA_ALL;
    o->mb = 64;
    o->n = 4096;
    o->reps = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(NULL);
        if (i + 1 >= argc) return usage("missing value after an option");
        char *v = argv[++i];
        if (!strcmp(a, "--type")) {
            int rc = parse_types(v, o);
            if (rc) return rc;
        } else if (!strcmp(a, "--isa")) {
            if (!strcmp(v, "all")) o->isa = ISA_ALL;
            else if (!strcmp(v, "best")) o->isa = ISA_BEST;
            else {
                o->isa = -100;
                for (int k = 0; k < QUANT_ISA_COUNT; k++)
                    if (!strcmp(v, quant_isa_name((enum quant_isa)k))) o->isa = k;
                if (o->isa == -100) return usage("--isa must be scalar, avx2, avx512, neon, best or all");
                if (!quant_isa_available((enum quant_isa)o->isa)) {
                    fprintf(stderr, "quant-bench: ISA %s is not available on this CPU/build (best here: %s)\n", v,
                            quant_isa_name(quant_isa_best()));
                    return 1;
                }
            }
        } else if (!strcmp(a, "--mb")) {
            o->mb = strtod(v, NULL);
            if (!(o->mb >= 0.01 && o->mb <= 65536)) return usage("--mb must be in 0.01..65536");
            o->mb_set = true;
        } else if (!strcmp(a, "--n")) {
            o->n = strtoll(v, NULL, 10);
            if (o->n < 256 || o->n > (1 << 24) || o->n % 256) return usage("--n must be a multiple of 256 in 256..16M");
        } else if (!strcmp(a, "--tokens")) {
            o->ntokens = 0;
            for (char *tok = strtok(v, ","); tok; tok = strtok(NULL, ",")) {
                int t = atoi(tok);
                if (t < 1 || t > 4096 || o->ntokens == 16) return usage("--tokens: up to 16 counts in 1..4096");
                o->tokens[o->ntokens++] = t;
            }
        } else if (!strcmp(a, "--reps")) {
            o->reps = atoi(v);
            if (o->reps < 1 || o->reps > MAX_REPS) return usage("--reps must be in 1..101");
        } else {
            fprintf(stderr, "quant-bench: unknown option '%s'\n", a);
            return usage(NULL);
        }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds of one pass over all rows; op 0 = dequant, 1 = dot. `sink` keeps results observable. */
static double time_pass(const quant_ops *ops, int op, const unsigned char *w, size_t row_bytes, int64_t rows,
                        int64_t n, const void *act, float *buf, int reps, volatile float *sink) {
    double t[MAX_REPS] = {0};
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        float acc = 0.0f;
        const double t0 = timer_now();
        for (int64_t i = 0; i < rows; i++) {
            if (op == 0) {
                ops->to_float(w + (size_t)i * row_bytes, buf, n);
                acc += buf[i & 255];
            } else {
                float s;
                ops->vec_dot(n, &s, w + (size_t)i * row_bytes, act);
                acc += s;
            }
        }
        const double dt = timer_now() - t0;
        *sink += acc;
        if (r >= 0) t[r] = dt;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

static void print_conditions(const bench_opts *o) {
    char model[256] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
                snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
                model[strcspn(model, "\n")] = 0;
                break;
            }
        }
        fclose(f);
    }
    char load[128] = "?";
    f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fgets(load, sizeof load, f)) load[strcspn(load, "\n")] = 0;
        fclose(f);
    }
    printf("quant-bench: %s; compiler %s; single thread; %g MiB of weights per type in rows of %lld values; "
           "median of %d passes; loadavg %s\n\n",
           model,
#ifdef __VERSION__
           __VERSION__,
#else
           "?",
#endif
           o->mb, (long long)o->n, o->reps, load);
}

static void fmt_cell(char *dst, size_t cap, double seconds, size_t bytes, int64_t rows, int gbs) {
    if (seconds <= 0) {
        snprintf(dst, cap, "-");
        return;
    }
    if (gbs) snprintf(dst, cap, "%.2f", (double)bytes / seconds * 1e-9);
    else snprintf(dst, cap, "%.0f", seconds / (double)rows * 1e9);
}

int cmd_quant_bench(int argc, char **argv) {
    bench_opts o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;

    int isas[QUANT_ISA_COUNT + 1], nisas = 0;
    if (o.isa == ISA_ALL) {
        for (int k = 0; k < QUANT_ISA_COUNT; k++)
            if (quant_isa_available((enum quant_isa)k)) isas[nisas++] = k;
    } else {
        isas[nisas++] = o.isa;
    }

    if (o.ntokens) {
        if (!o.mb_set) o.mb = 4;
        print_conditions(&o);
        return quant_bench_matmul(o.types, o.ntypes, o.tokens, o.ntokens, o.n, o.mb, o.reps);
    }
    print_conditions(&o);
    printf("| type | bits/value | isa | dequant GB/s | dequant ns/row | dot GB/s | dot ns/row | dot vs scalar |\n");
    printf("|---|---:|---|---:|---:|---:|---:|---:|\n");

    volatile float sink = 0.0f;
    rng r;
    rng_seed(&r, 170);
    for (int ti = 0; ti < o.ntypes; ti++) {
        const enum qtype t = o.types[ti];
        const qtype_info *info = qtype_get((uint32_t)t);
        const quant_ops *scalar = quant_ops_get(t, QUANT_ISA_SCALAR);
        if (o.n % info->blck) {
            fprintf(stderr, "quant-bench: %s: --n %lld is not a multiple of its block size %lld, skipped\n", info->name,
                    (long long)o.n, (long long)info->blck);
            continue;
        }
        const size_t row_bytes = qtype_row_bytes(t, o.n);
        int64_t rows = (int64_t)(o.mb * 1048576.0 / (double)row_bytes);
        if (rows < 1) rows = 1;
        const size_t bytes = (size_t)rows * row_bytes;
        unsigned char *w = malloc(bytes);
        float *buf = malloc((size_t)o.n * sizeof(float));
        void *act = malloc(qtype_row_bytes(scalar->vec_dot_type, o.n));
        if (!w || !buf || !act) {
            fprintf(stderr, "quant-bench: out of memory allocating %zu bytes of %s weights\n", bytes, info->name);
            free(w), free(buf), free(act);
            return 1;
        }
        if (!quant_random_blocks(t, w, (int64_t)(bytes / info->type_size), 0.02f, &r)) {
            fprintf(stderr, "quant-bench: %s: no random block generator, skipped\n", info->name);
            free(w), free(buf), free(act);
            continue;
        }
        for (int64_t i = 0; i < o.n; i++) buf[i] = rng_normal(&r);
        const quant_ops *qa = quant_ops_get(scalar->vec_dot_type, QUANT_ISA_SCALAR);
        if (qa && qa->from_float) qa->from_float(buf, act, o.n);

        double scalar_dot = 0;
        for (int k = 0; k < nisas; k++) {
            quant_ops best;
            const quant_ops *ops;
            if (isas[k] == ISA_BEST) {
                best = quant_ops_best(t);
                ops = &best;
            } else {
                ops = quant_ops_get(t, (enum quant_isa)isas[k]);
            }
            const bool can_dot = ops->vec_dot && qa && qa->from_float && ops->vec_dot_type == scalar->vec_dot_type;
            double td = ops->to_float ? time_pass(ops, 0, w, row_bytes, rows, o.n, act, buf, o.reps, &sink) : 0;
            double tv = can_dot ? time_pass(ops, 1, w, row_bytes, rows, o.n, act, buf, o.reps, &sink) : 0;
            if (isas[k] == QUANT_ISA_SCALAR) scalar_dot = tv;
            char c[4][32], sp[32] = "-";
            fmt_cell(c[0], sizeof c[0], td, bytes, rows, 1);
            fmt_cell(c[1], sizeof c[1], td, bytes, rows, 0);
            fmt_cell(c[2], sizeof c[2], tv, bytes, rows, 1);
            fmt_cell(c[3], sizeof c[3], tv, bytes, rows, 0);
            if (scalar_dot > 0 && tv > 0) snprintf(sp, sizeof sp, "%.1fx", scalar_dot / tv);
            printf("| %s | %.2f | %s | %s | %s | %s | %s | %s |\n", info->name,
                   8.0 * (double)info->type_size / (double)info->blck,
                   isas[k] == ISA_BEST ? "best" : quant_isa_name((enum quant_isa)isas[k]), c[0], c[1], c[2], c[3], sp);
            fflush(stdout);
        }
        free(w), free(buf), free(act);
    }
    return 0;
}
