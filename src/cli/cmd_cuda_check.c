/* llm170 cuda-check: runs every conformance case of the CUDA kernels (decode and prefill tables of
 * backends/cuda/cuda_check.h, the last decode case being the backend conformance suite on the CUDA
 * executor) on one device and prints op, variant, max error, tolerance and pass; with --bench also the
 * kernel time, GB/s and % of the H200's measured 4450 GB/s (or TFLOP/s). With --engine instead: synth
 * models of every arch (tiny-llama, tiny-qwen35, tiny-qwen35moe; q4_k_m, q8_0, f16 mixes, written to
 * --dir) and every --model FILE run on the CPU and on the GPU and compared (cli/engine_check.c). Exits 1
 * if any case fails or errs, 2 on a usage error. In a build without CUDA it says so and exits 1. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli.h"

#ifdef LLM170_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_util.h"
#include "cli/engine_check.h"
#include "synth/synth.h"

#define PEAK_GBPS 4450.0 /* H200 read bandwidth measured with a streaming kernel (shared/GPU.md) */

/* filter: comma-separated substrings of "op variant"; a case matches if any does */
static bool matches(const cuda_check_case *c, const char *filter) {
    if (!filter) return true;
    char name[256], alt[128];
    snprintf(name, sizeof name, "%s %s", c->op, c->variant);
    for (const char *p = filter; *p;) {
        size_t n = strcspn(p, ",");
        if (n > 0 && n < sizeof alt) {
            memcpy(alt, p, n);
            alt[n] = 0;
            if (strstr(name, alt)) return true;
        }
        p += n + (p[n] == ',');
    }
    return false;
}

/* runs one table; counts into *n_run / *n_bad */
static void run_table(const cuda_check_case *cases, int n, const char *filter, uint64_t seed, bool bench, int *n_run,
                      int *n_bad) {
    for (int i = 0; i < n; i++) {
        const cuda_check_case *c = &cases[i];
        if (!matches(c, filter)) continue;
        cuda_check_result r = {0};
        err e = {0};
        int rc = c->run(seed + (uint64_t)i * 0x9e37u, bench, &r, &e);
        bool ok = rc == 0 && r.max_err <= r.tol;
        (*n_run)++;
        if (!ok) (*n_bad)++;
        if (rc) {
            printf("%-16s %-34s %10s %10s %-4s  error: %s\n", c->op, c->variant, "-", "-", "ERR", e.msg);
            continue;
        }
        printf("%-16s %-34s %10.3g %10.3g %-4s", c->op, c->variant, r.max_err, r.tol, ok ? "ok" : "FAIL");
        if (bench && r.us > 0) {
            printf(" %9.2f", r.us);
            if (r.gbps > 0) printf(" %8.0f %5.1f%%", r.gbps, 100.0 * r.gbps / PEAK_GBPS);
            else printf(" %8s %6s", "", "");
            if (r.tflops > 0) printf(" %7.1f", r.tflops);
        }
        if (r.detail[0]) printf("  %s", r.detail);
        printf("\n");
        fflush(stdout);
    }
}

/* --engine: synth models of every arch in three mixes, then the given files, CPU vs cuda:dev; cuda:dev (its
 * small passes as CUDA graphs) also bit for bit against cuda:dev:nograph (every op its own launch), and at
 * least one graph must have run */
static int run_engine(int dev, const char *dir, const char **models, int n_models, int n_threads) {
    static const char *presets[] = {"tiny-llama", "tiny-qwen2", "tiny-qwen35", "tiny-qwen35moe"};
    static const char *mixes[] = {"q4_k_m", "q8_0", "f16"};
    char ddut[32], dsame[40], path[1024], label[128];
    snprintf(ddut, sizeof ddut, "cuda:%d", dev);
    snprintf(dsame, sizeof dsame, "cuda:%d:nograph", dev);
    engine_check_header("cpu", ddut, dsame);
    int bad = 0, n = 0;
    for (size_t p = 0; p < sizeof presets / sizeof presets[0]; p++)
        for (size_t m = 0; m < sizeof mixes / sizeof mixes[0]; m++) {
            err e = {0};
            snprintf(path, sizeof path, "%s/engine-check-%s-%s.gguf", dir, presets[p], mixes[m]);
            snprintf(label, sizeof label, "%s %s", presets[p], mixes[m]);
            const synth_preset *sp = synth_preset_find(presets[p]);
            if (!sp || synth_write(sp, (enum synth_mix)synth_mix_from_name(mixes[m]), 170, path, NULL, NULL, &e)) {
                printf("| %s | - | - | - | - | - | - | FAIL | synth: %s\n", label, sp ? e.msg : "no such preset");
                bad++;
                continue;
            }
            bad += engine_check_model(path, label, "cpu", ddut, dsame, n_threads);
            n++;
            remove(path);
        }
    for (int i = 0; i < n_models; i++, n++) bad += engine_check_model(models[i], models[i], "cpu", ddut, dsame, n_threads);
    cuda_graph_stats g;
    cuda_graph_stats_get(&g);
    printf("cuda graphs: %llu passes run as graphs in %llu pieces (%llu exec updates, %llu instantiations), %llu "
           "captures given up for an eager run%s\n",
           (unsigned long long)g.passes, (unsigned long long)g.launched, (unsigned long long)g.updated,
           (unsigned long long)g.instantiated, (unsigned long long)g.eager,
           g.passes ? "" : ": FAIL, no pass ran as a graph");
    bad += !g.passes;
    printf("engine check: %d models, %d failed\n", n, bad);
    return bad ? 1 : 0;
}

int cmd_cuda_check(int argc, char **argv) {
    const char *cmd = "cuda-check", *filter = NULL, *dir = "/tmp";
    const char *models[16];
    int n_models = 0, n_threads = 4;
    bool bench = false, engine = false;
    uint64_t seed = 1;
    int dev = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--bench")) bench = true;
        else if (!strcmp(argv[i], "--engine")) engine = true;
        else if (!strcmp(argv[i], "--dir")) {
            if (!(dir = args_value(cmd, argc, argv, &i))) return 2;
        } else if (!strcmp(argv[i], "--model")) {
            if (!(v = args_value(cmd, argc, argv, &i))) return 2;
            if (n_models < 16) models[n_models++] = v;
        } else if (!strcmp(argv[i], "-t")) {
            if (!(v = args_value(cmd, argc, argv, &i)) || !args_int(cmd, "-t", v, 1, 256, &n_threads)) return 2;
        }
        else if (!strcmp(argv[i], "--filter")) {
            if (!(filter = args_value(cmd, argc, argv, &i))) return 2;
        } else if (!strcmp(argv[i], "--seed")) {
            if (!(v = args_value(cmd, argc, argv, &i)) || !args_u64(cmd, "--seed", v, &seed)) return 2;
        } else if (!strcmp(argv[i], "--device")) {
            if (!(v = args_value(cmd, argc, argv, &i)) || !args_int(cmd, "--device", v, 0, 63, &dev)) return 2;
        } else {
            fprintf(stderr, "llm170 cuda-check: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    char info[256];
    err e = {0};
    if (cu_select_device(dev, info, sizeof info, &e)) {
        fprintf(stderr, "llm170 cuda-check: %s\n", e.msg);
        return 1;
    }
    if (engine) return run_engine(dev, dir, models, n_models, n_threads);
    printf("device %d: %s; seed %llu\n", dev, info, (unsigned long long)seed);
    printf("%-16s %-34s %10s %10s %-4s", "op", "variant", "max err", "tol", "pass");
    if (bench) printf(" %9s %8s %6s %7s", "us", "GB/s", "%peak", "TFLOP/s");
    printf("\n");
    int n_run = 0, n_bad = 0;
    run_table(cuda_check_decode_cases, cuda_check_decode_n, filter, seed, bench, &n_run, &n_bad);
    run_table(cuda_check_prefill_cases, cuda_check_prefill_n, filter, seed, bench, &n_run, &n_bad);
    printf("cuda-check: %d cases, %d passed, %d failed\n", n_run, n_run - n_bad, n_bad);
    if (n_run == 0) fprintf(stderr, "llm170 cuda-check: no case matches the filter\n");
    return n_bad || n_run == 0 ? 1 : 0;
}
#else
int cmd_cuda_check(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "llm170 cuda-check: this build has no CUDA backend (configure with -DLLM170_CUDA=ON where nvcc "
                    "is installed)\n");
    return 1;
}
#endif
