/* llm170 synth: writes a random-weight GGUF in the exact shapes of a real model (see src/synth/synth.h),
 * or lists the presets with their parameter counts and file sizes per mix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "cli/cli.h"
#include "synth/synth.h"

static void usage(FILE *f) {
    fprintf(f, "usage: llm170 synth --preset NAME --out FILE.gguf [--type f32|f16|q8_0|q4_0|q4_k_m|q2_k|iq2_xxs|iq1_s]\n"
               "                    [--tensor-type NAME=TYPE]... [--seed N]\n"
               "  --tensor-type: as llama-quantize's, for the quantized mixes past q8_0: quantizable tensors whose\n"
               "                 name contains NAME get TYPE (a ggml block type, e.g. q1_0); the first match wins\n"
               "       llm170 synth --list\n");
}

typedef struct progress {
    double t0;
    bool shown;
} progress;

static void on_progress(void *ud, uint64_t done, uint64_t total) {
    progress *pr = ud;
    if (total < (256u << 20)) return; /* small files finish before a progress line would help */
    double dt = timer_now() - pr->t0;
    fprintf(stderr, "\rsynth: %6.2f / %.2f GB (%3.0f%%), %.0f MB/s", 1e-9 * (double)done, 1e-9 * (double)total,
            total ? 100.0 * (double)done / (double)total : 100.0, dt > 0 ? 1e-6 * (double)done / dt : 0.0);
    pr->shown = true;
}

static int list_presets(void) {
    printf("%-20s %-10s %14s", "preset", "arch", "parameters");
    for (int m = 0; m < SYNTH_MIX_COUNT; m++) printf(" %10s", synth_mix_name((enum synth_mix)m));
    printf("   (tensor data, GB = 1e9 bytes)\n");
    for (size_t i = 0; i < synth_preset_count(); i++) {
        const synth_preset *p = synth_preset_at(i);
        err e = {0};
        synth_plan plan;
        if (synth_plan_make(p, SYNTH_MIX_F32, &plan, &e)) {
            fprintf(stderr, "llm170 synth: %s\n", e.msg);
            return 1;
        }
        printf("%-20s %-10s %14lld", p->name, synth_arch_name(p->arch), (long long)plan.n_params);
        synth_plan_free(&plan);
        for (int m = 0; m < SYNTH_MIX_COUNT; m++) {
            if (synth_plan_make(p, (enum synth_mix)m, &plan, &e)) {
                fprintf(stderr, "llm170 synth: %s\n", e.msg);
                return 1;
            }
            printf(" %8.3f GB", 1e-9 * (double)plan.n_bytes);
            synth_plan_free(&plan);
        }
        printf("\n");
    }
    return 0;
}

int cmd_synth(int argc, char **argv) {
    const char *preset = NULL, *out = NULL, *type = "q4_k_m";
    unsigned long long seed = 1;
    bool list = false;
    synth_quant q = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "--list")) {
            list = true;
        } else if (!strcmp(a, "--preset") && has_val) {
            preset = argv[++i];
        } else if (!strcmp(a, "--out") && has_val) {
            out = argv[++i];
        } else if (!strcmp(a, "--type") && has_val) {
            type = argv[++i];
        } else if (!strcmp(a, "--tensor-type") && has_val) {
            const char *v = argv[++i], *eq = strchr(v, '=');
            const int t = eq ? qtype_from_name(eq + 1) : -1;
            if (!eq || eq == v || (size_t)(eq - v) >= sizeof q.ov[0].name || t < 0 || qtype_get((uint32_t)t)->blck == 1 ||
                q.n_ov == SYNTH_MAX_OVERRIDES) {
                fprintf(stderr, "llm170 synth: --tensor-type expects NAME=TYPE with a block-quantized ggml type (at most "
                                "%d of them), found '%s'\n", SYNTH_MAX_OVERRIDES, v);
                return 2;
            }
            snprintf(q.ov[q.n_ov].name, sizeof q.ov[0].name, "%.*s", (int)(eq - v), v);
            q.ov[q.n_ov++].type = (enum qtype)t;
        } else if (!strcmp(a, "--seed") && has_val) {
            char *end;
            seed = strtoull(argv[++i], &end, 0);
            if (*end || !*argv[i]) {
                fprintf(stderr, "llm170 synth: --seed expects an unsigned integer, found '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "llm170 synth: unknown or incomplete argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (list) return list_presets();
    if (!preset || !out) {
        fprintf(stderr, "llm170 synth: --preset and --out are required (or --list)\n");
        usage(stderr);
        return 2;
    }
    const synth_preset *p = synth_preset_find(preset);
    if (!p) {
        fprintf(stderr, "llm170 synth: unknown preset '%s'; presets:", preset);
        for (size_t i = 0; i < synth_preset_count(); i++) fprintf(stderr, " %s", synth_preset_at(i)->name);
        fprintf(stderr, "\n");
        return 2;
    }
    int m = synth_mix_from_name(type);
    if (m < 0) {
        fprintf(stderr, "llm170 synth: unknown --type '%s'; expected one of", type);
        for (int i = 0; i < SYNTH_MIX_COUNT; i++) fprintf(stderr, " %s", synth_mix_name((enum synth_mix)i));
        fprintf(stderr, "\n");
        return 2;
    }
    if (q.n_ov && m <= SYNTH_MIX_Q8_0) {
        fprintf(stderr, "llm170 synth: --tensor-type needs a llama-quantize mix (q4_0 and after), not %s\n", type);
        return 2;
    }
    q.mix = (enum synth_mix)m;
    progress pr = {.t0 = timer_now()};
    err e = {0};
    int rc = synth_write_with(p, &q, seed, out, on_progress, &pr, &e);
    if (pr.shown) fprintf(stderr, "\n");
    if (rc) {
        fprintf(stderr, "llm170 synth: %s\n", e.msg);
        return 1;
    }
    fprintf(stderr, "synth: wrote %s (%s, %s) in %.1f s\n", out, p->name, synth_mix_name((enum synth_mix)m),
            timer_now() - pr.t0);
    return 0;
}
