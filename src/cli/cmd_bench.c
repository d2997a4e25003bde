/* llm170 bench: prompt processing (pp: one prompt of P tokens in one batch, from an empty cache) and text
 * generation (tg: N tokens one at a time, from an empty cache), each repeated R times after a warm-up
 * run, printed as llama-bench's markdown table (t/s as mean ± standard deviation over the repetitions).
 * Token ids are random (fixed seed), as llama-bench's are. As llama-bench, -d D first fills the cache
 * with D tokens (not timed; the test is named "pp512 @ d512"); -np S decodes S sequences together, one
 * token each per step, in one batch, the t/s counting all of them ("tg128 x8": what a server's batched
 * decode does). With --spec (ngram, draft, mtp) the tg test generates instead: greedy from a random prompt of
 * max(D, 32) tokens, plain and speculative runs interleaved, and prints both rows, the speed-up, the
 * acceptance rate and the mean accepted length (what speculation gains or costs on text that does not
 * repeat). --temp T samples instead of greedy (seed 1, the same draws in both runs: speculation's output is
 * plain decoding's for any sampler); at a high T the stream is close to uniformly random tokens, where
 * speculation must switch itself off (issue 16: >= 0.97x plain). With --compare-graphs on a CUDA device, the tg test runs again on the same GPU with its CUDA
 * graphs off (DEVICE:nograph, a second copy of the model: every op its own launch) and the speed-up of
 * the graphs is printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/timer.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/spec_cli.h"
#include "llm170.h"
#ifdef LLM170_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

typedef struct bench_cfg {
    int n_prompt, n_gen, reps;
} bench_cfg;

/* One timed run; returns seconds or a negative value on error (message printed). n_par sequences each get
 * a random prompt of `depth` tokens first (not timed); then the prompt of n_prompt tokens (sequence 0)
 * and n_gen steps that each decode one token for every sequence in one batch. */
static double run_once(llm170_context *ctx, int n_vocab, int n_prompt, int n_gen, int n_par, int depth, rng *r) {
    int nt = n_prompt > depth ? n_prompt : depth;
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)(nt > n_par ? nt : n_par));
    llm170_seq_batch *b = malloc(sizeof *b * (size_t)n_par);
    if (!toks || !b) goto fail;
    for (int s = 0; s < n_par; s++) {
        llm170_seq_reset(ctx, s);
        if (depth > 0) {
            for (int i = 0; i < depth; i++) toks[i] = (int32_t)(rng_u64(r) % (uint64_t)n_vocab);
            llm170_seq_batch d = {.seq = s, .n_tokens = depth, .tokens = toks};
            if (llm170_decode(ctx, &d, 1)) goto fail;
        }
    }
    for (int i = 0; i < n_prompt; i++) toks[i] = (int32_t)(rng_u64(r) % (uint64_t)n_vocab);
    double t0 = timer_now();
    if (n_prompt > 0) {
        b[0] = (llm170_seq_batch){.seq = 0, .n_tokens = n_prompt, .tokens = toks};
        if (llm170_decode(ctx, b, 1)) goto fail;
    }
    for (int i = 0; i < n_gen; i++) {
        for (int s = 0; s < n_par; s++) {
            toks[s] = (int32_t)(rng_u64(r) % (uint64_t)n_vocab);
            b[s] = (llm170_seq_batch){.seq = s, .n_tokens = 1, .tokens = &toks[s]};
        }
        if (llm170_decode(ctx, b, n_par)) goto fail;
    }
    double dt = timer_now() - t0;
    free(toks);
    free(b);
    return dt;
fail:
    fprintf(stderr, "llm170 bench: %s\n", llm170_last_error());
    free(toks);
    free(b);
    return -1;
}

static const char *bench_backend = "CPU"; /* the table's backend column, llama-bench's names */

/* One generation of n_gen tokens after prompt through llm170_spec (type NONE: plain), greedy or sampled by
 * smp_p (NULL: greedy); seconds of the generation, or < 0. */
static double gen_once(llm170_model *m, llm170_context *ctx, const llm170_spec_params *sp,
                       const llm170_sampler_params *smp_p, const int32_t *prompt, int n_prompt, int n_gen,
                       llm170_spec_stats *sum) {
    llm170_spec *s = NULL;
    llm170_sampler *smp = NULL;
    double dt = -1;
    int32_t out[32];
    if (llm170_spec_new(ctx, 0, sp, &s) || llm170_spec_prompt(s, prompt, n_prompt) ||
        llm170_sampler_new(m, smp_p, &smp))
        goto done;
    double t0 = timer_now();
    for (int got = 0; got < n_gen;) {
        int n = llm170_spec_next(s, smp, out, n_gen - got < 32 ? n_gen - got : 32);
        if (n < 0) goto done;
        got += n;
    }
    dt = timer_now() - t0;
    llm170_spec_stats st;
    llm170_spec_get_stats(s, &st);
    spec_cli_stats_add(sum, &st);
done:
    if (dt < 0) fprintf(stderr, "llm170 bench: %s\n", llm170_last_error());
    llm170_sampler_free(smp);
    llm170_spec_free(s);
    return dt;
}

/* The tg test with --spec: plain and speculative generation interleaved, reps each; temp > 0 samples. */
static int run_spec(llm170_model *m, llm170_context *ctx, const spec_cli *sc, const char *desc, double size_mib, double params_m,
                    int threads, int n_gen, int n_prompt, int reps, float temp) {
    const int V = llm170_model_n_vocab(m);
    int32_t *prompt = malloc(sizeof(int32_t) * (size_t)n_prompt);
    if (!prompt) return 1;
    rng r;
    rng_seed(&r, 42);
    for (int i = 0; i < n_prompt; i++) prompt[i] = (int32_t)(rng_u64(&r) % (uint64_t)V);
    llm170_spec_params none = llm170_spec_default_params();
    llm170_spec_stats st_plain = {0}, st = {0}, warm = {0};
    llm170_sampler_params smp = llm170_sampler_default_params();
    smp.temperature = temp, smp.seed = 1;
    const llm170_sampler_params *sp = temp > 0 ? &smp : NULL;
    double tps[2] = {0, 0};
    int rc = gen_once(m, ctx, &none, sp, prompt, n_prompt, n_gen, &warm) < 0; /* warm-up */
    for (int i = 0; i < reps && !rc; i++) {
        double a = gen_once(m, ctx, &none, sp, prompt, n_prompt, n_gen, &st_plain);
        double b = gen_once(m, ctx, &sc->p, sp, prompt, n_prompt, n_gen, &st);
        rc = a < 0 || b < 0;
        tps[0] += n_gen / a / reps, tps[1] += n_gen / b / reps;
    }
    free(prompt);
    if (rc) return 1;
    static const char *names[] = {"none", "ngram", "draft", "mtp"};
    char name[2][48];
    char how[24] = "greedy";
    if (temp > 0) snprintf(how, sizeof how, "temp %g", temp);
    snprintf(name[0], sizeof name[0], "tg%d %s", n_gen, how);
    snprintf(name[1], sizeof name[1], "tg%d spec %s", n_gen, names[sc->p.type]);
    for (int j = 0; j < 2; j++) {
        char t[64];
        snprintf(t, sizeof t, "%.2f", tps[j]);
        printf("| %-30s | %10.2f MiB | %8.2f M | %-10s | %7d | %15s | %20s |\n", desc, size_mib, params_m, bench_backend,
               threads, name[j], t);
    }
    printf("\nspeed-up %.3fx (spec / plain t/s, %s, means of %d interleaved runs of a %d-token random prompt)\n",
           tps[1] / tps[0], how, reps, n_prompt);
    spec_cli_report(stdout, sc, &st);
    return 0;
}

/* one test, warm-up then reps; prints its row; *mean_tps (may be NULL): the mean t/s */
static int run_test(llm170_context *ctx, int n_vocab, const char *desc, double size_mib, double params_m,
                    int threads, const char *name, int n_prompt, int n_gen, int n_par, int depth, int reps,
                    double *mean_tps) {
    rng r;
    rng_seed(&r, 42);
    if (run_once(ctx, n_vocab, n_prompt, n_gen, n_par, depth, &r) < 0) return 1; /* warm-up */
    double sum = 0, sum2 = 0;
    for (int i = 0; i < reps; i++) {
        double dt = run_once(ctx, n_vocab, n_prompt, n_gen, n_par, depth, &r);
        if (dt < 0) return 1;
        double tps = (n_prompt + (double)n_gen * n_par) / dt;
        sum += tps;
        sum2 += tps * tps;
    }
    double mean = sum / reps, sd = reps > 1 ? sqrt(fmax(0, (sum2 - reps * mean * mean) / (reps - 1))) : 0;
    if (mean_tps) *mean_tps = mean;
    char tps[64];
    snprintf(tps, sizeof tps, "%.2f ± %.2f", mean, sd);
    printf("| %-30s | %10.2f MiB | %8.2f M | %-10s | %7d | %15s | %20s |\n", desc, size_mib, params_m, bench_backend, threads,
           name, tps);
    fflush(stdout);
    return 0;
}

/* --compare-graphs: the tg test of cmd_bench on `device`:nograph; prints its row and the speed-up over tps */
static int run_eager(const char *path, const llm170_model_params *mp0, const llm170_context_params *cp, const char *name,
                     int n_gen, int n_par, int depth, int reps, double tps) {
    char dev[64];
    snprintf(dev, sizeof dev, "%s%s:nograph", mp0->device, strchr(mp0->device, ':') ? "" : ":0");
    llm170_model_params mp = *mp0;
    mp.device = dev;
    llm170_model *m = NULL;
    llm170_context *ctx = NULL;
    int rc = 1;
    double eager = 0;
    if (llm170_model_load(path, &mp, &m) || llm170_context_new(m, cp, &ctx)) {
        fprintf(stderr, "llm170 bench: %s: %s\n", dev, llm170_last_error());
        goto done;
    }
    char desc[96];
    llm170_model_desc(m, desc, sizeof desc);
    const char *saved_backend = bench_backend;
    bench_backend = "CUDA-eager";
    rc = run_test(ctx, llm170_model_n_vocab(m), desc, (double)llm170_model_size(m) / (1 << 20),
                  (double)llm170_model_n_params(m) / 1e6, mp.n_threads, name, 0, n_gen, n_par, depth, reps, &eager);
    bench_backend = saved_backend;
    if (!rc) printf("\ncuda graphs: %s %.2f t/s with, %.2f t/s without (%s): %.3fx\n", name, tps, eager, dev, tps / eager);
done:
    llm170_context_free(ctx);
    llm170_model_free(m);
    return rc;
}

int cmd_bench(int argc, char **argv) {
    const char *path = NULL;
    bool compare_graphs = false;
    int n_prompt = 512, n_gen = 128, reps = 5, n_par = 1, depth = 0, ctk = 0, ctv = 0;
    float temp = 0;
    llm170_model_params mp = llm170_model_default_params();
    mp.n_threads = args_default_threads();
    spec_cli sc;
    spec_cli_init(&sc);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        bool ok = true;
        if (!strcmp(a, "--compare-graphs")) {
            compare_graphs = true;
            continue;
        }
        if (!(v = args_value("bench", argc, argv, &i))) return 2;
        if (spec_cli_flag("bench", a, v, &sc, &ok)) {
            if (!ok) return 2;
            continue;
        }
        if (!strcmp(a, "--model") || !strcmp(a, "-m")) path = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) ok = args_int("bench", a, v, 0, 1 << 20, &n_prompt);
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) ok = args_int("bench", a, v, 0, 1 << 20, &n_gen);
        else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) ok = args_int("bench", a, v, 1, 1000, &reps);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) ok = args_int("bench", a, v, 1, 1024, &mp.n_threads);
        else if (!strcmp(a, "--device") || !strcmp(a, "-dev")) mp.device = v, bench_backend = strncmp(v, "cuda", 4) ? "CPU" : strstr(v, ":nograph") ? "CUDA-eager" : "CUDA";
        else if (args_cache_flags("bench", a, v, &ctk, &ctv, &ok)) {
        }
        else if (!strcmp(a, "-np") || !strcmp(a, "--parallel")) ok = args_int("bench", a, v, 1, 256, &n_par);
        else if (!strcmp(a, "-d") || !strcmp(a, "--n-depth")) ok = args_int("bench", a, v, 0, 1 << 20, &depth);
        else if (!strcmp(a, "--temp")) ok = args_float("bench", a, v, 0, 1e6f, &temp);
        else {
            fprintf(stderr, "llm170 bench: unknown flag '%s'\nusage: llm170 bench --model M [-p 512] [-n 128] [-r 5] [-t N] [-np SEQS] [-d DEPTH] [--temp T] [--device D [--compare-graphs]] [-ctk T] [-ctv T] %s\n", a, spec_cli_usage());
            return 2;
        }
        if (!ok) return 2;
    }
    if (!path) {
        fprintf(stderr, "usage: llm170 bench --model M [-p 512] [-n 128] [-r 5] [-t N] [-np SEQS] [-d DEPTH] [--temp T] [--device D [--compare-graphs]] [-ctk T] [-ctv T] %s\n", spec_cli_usage());
        return 2;
    }
    if (compare_graphs && (!mp.device || strncmp(mp.device, "cuda", 4) || strstr(mp.device, ":nograph") ||
                           sc.p.type != LLM170_SPEC_NONE || n_gen < 1)) {
        fprintf(stderr, "llm170 bench: --compare-graphs needs --device cuda[:N] (graphs on), a tg test (-n > 0) and no "
                        "--spec\n");
        return 2;
    }
    llm170_model *model = NULL;
    llm170_context *ctx = NULL;
    int rc = 1;
    if (temp > 0 && sc.p.type == LLM170_SPEC_NONE) {
        fprintf(stderr, "llm170 bench: --temp samples the --spec test's streams; without --spec the tests decode "
                        "given random tokens\n");
        return 2;
    }
    if (sc.p.type != LLM170_SPEC_NONE && n_par > 1) {
        fprintf(stderr, "llm170 bench: --spec decodes one sequence (-np 1)\n");
        return 2;
    }
    if (llm170_model_load(path, &mp, &model)) {
        fprintf(stderr, "llm170 bench: %s\n", llm170_last_error());
        return 1;
    }
    if (!spec_cli_load("bench", &sc, &mp)) goto done;
    const int spec_prompt = depth > 32 ? depth : 32;
    int need = depth + (n_prompt > n_gen ? n_prompt : n_gen); /* the cache after the depth, then the test */
    if (sc.p.type != LLM170_SPEC_NONE && need < spec_prompt + n_gen + 40) need = spec_prompt + n_gen + 40;
    int nb = n_prompt > depth ? n_prompt : depth;
    if (sc.p.type != LLM170_SPEC_NONE && nb < spec_prompt + 1) nb = spec_prompt + 1; /* > draft-max too */
    llm170_context_params cp = {.n_seq = n_par, .n_ctx = need > 0 ? need : 1,
                                .n_batch = nb > n_par ? nb : n_par, .cache_type_k = ctk, .cache_type_v = ctv};
    if (llm170_context_new(model, &cp, &ctx)) {
        fprintf(stderr, "llm170 bench: %s\n", llm170_last_error());
        goto done;
    }
    char desc[96];
    llm170_model_desc(model, desc, sizeof desc);
    double size_mib = (double)llm170_model_size(model) / (1 << 20), params_m = (double)llm170_model_n_params(model) / 1e6;
    printf("| %-30s | %14s | %10s | %-10s | %7s | %15s | %20s |\n", "model", "size", "params", "backend", "threads",
           "test", "t/s");
    printf("| ------------------------------ | -------------: | ---------: | ---------- | ------: | --------------: | -------------------: |\n");
    char name[32];
    int n_vocab = llm170_model_n_vocab(model);
    if (n_prompt > 0) {
        if (depth) snprintf(name, sizeof name, "pp%d @ d%d", n_prompt, depth);
        else snprintf(name, sizeof name, "pp%d", n_prompt);
        if (run_test(ctx, n_vocab, desc, size_mib, params_m, mp.n_threads, name, n_prompt, 0, 1, depth, reps, NULL))
            goto done;
    }
    if (n_gen > 0 && sc.p.type != LLM170_SPEC_NONE) {
        if (run_spec(model, ctx, &sc, desc, size_mib, params_m, mp.n_threads, n_gen, spec_prompt, reps, temp)) goto done;
    } else if (n_gen > 0) {
        char par[16] = "";
        if (n_par > 1) snprintf(par, sizeof par, " x%d", n_par);
        if (depth) snprintf(name, sizeof name, "tg%d%s @ d%d", n_gen, par, depth);
        else snprintf(name, sizeof name, "tg%d%s", n_gen, par);
        double tps = 0;
#ifdef LLM170_HAVE_CUDA
        cuda_graph_stats g0, g1;
        cuda_graph_stats_get(&g0);
#endif
        if (run_test(ctx, n_vocab, desc, size_mib, params_m, mp.n_threads, name, 0, n_gen, n_par, depth, reps, &tps))
            goto done;
#ifdef LLM170_HAVE_CUDA
        cuda_graph_stats_get(&g1);
        if (g1.passes > g0.passes && g1.gpu_timed > g0.gpu_timed) {
            const double n = (double)(g1.passes - g0.passes);
            printf("cuda graphs: %s, per pass launched as a graph: host %.1f us capturing + %.1f us updating the exec, "
                   "GPU %.1f us from its first launch to its end (%llu passes, %.1f pieces each)\n", name, (double)(g1.capture_ns - g0.capture_ns) / n / 1e3,
                   (double)(g1.update_ns - g0.update_ns) / n / 1e3,
                   (double)(g1.gpu_ns - g0.gpu_ns) / (double)(g1.gpu_timed - g0.gpu_timed) / 1e3,
                   (unsigned long long)(g1.passes - g0.passes), (double)(g1.launched - g0.launched) / n);
        }
#endif
        if (compare_graphs && run_eager(path, &mp, &cp, name, n_gen, n_par, depth, reps, tps)) goto done;
    }
    printf("\nbuild: llm170 %s\n", LLM170_VERSION);
    rc = 0;
done:
    llm170_context_free(ctx);
    spec_cli_free(&sc);
    llm170_model_free(model);
    return rc;
}
