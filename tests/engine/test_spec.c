/* Speculative decoding (llm170_spec_*) gives exactly what plain decoding gives, on tiny synth models:
 *  - greedy, over several prompts and k = 1..8 (fixed k: adaptive off), for n-gram lookup and a draft
 *    model on a llama (the target itself as draft, which always agrees, and other weights, which do not),
 *    n-gram lookup and the MTP block on a qwen35 (GDN state rolled back), and on both an oracle drafter
 *    that proposes plain decoding's tokens with planted errors, so that every accepted length 0..k occurs
 *    (random models seldom repeat themselves, and their MTP block seldom agrees);
 *  - sampled (temperature 0.9, top-k 50): the same stream for the same seed;
 *  - the rounds really kept some drafts and rejected others (else the test would prove nothing);
 *  - after a generation the qwen35 recurrent state is bit-identical to decoding the kept tokens one by
 *    one; adaptive k switches speculation off when drafts are never kept;
 *  - a draft model of another vocabulary and MTP on a model without the block are clear errors. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rng.h"
#include "check.h"
#include "engine/spec.h"
#include "llm170.h"
#include "synth_model.h"

#define N_GEN 40
#ifdef __SANITIZE_ADDRESS__
/* the sanitizer pass (3-5x slower) needs the paths, not the sample: 2 prompts, and of k = 1..8 the ends and two
 * between (every k takes the same code; the Release pass runs all eight) */
#define N_PROMPTS 2
static const int k_list[] = {1, 2, 5, 8};
#else
#define N_PROMPTS 5
static const int k_list[] = {1, 2, 3, 4, 5, 6, 7, 8};
#endif
#define N_K ((int)(sizeof k_list / sizeof k_list[0]))
#define PROMPT_MAX 48

/* one thread: a test machine may be busy, and waiting on a second thread then costs more than it saves */
static llm170_model *make(const char *preset, const char *mix, uint64_t seed) {
    return synth_model_load(preset, mix, seed, 1);
}

static llm170_context *context(llm170_model *m) {
    llm170_context *c = NULL;
    llm170_context_params cp = {.n_seq = 1, .n_ctx = 256, .n_batch = 64};
    CHECKF(llm170_context_new(m, &cp, &c) == 0, "context: %s", llm170_last_error());
    return c;
}

static llm170_sampler *sampler(llm170_model *m, float temp, uint64_t seed) {
    llm170_sampler_params sp = llm170_sampler_default_params();
    sp.temperature = temp, sp.top_k = temp > 0 ? 50 : 0, sp.seed = seed;
    llm170_sampler *s = NULL;
    CHECK(llm170_sampler_new(m, &sp, &s) == 0);
    return s;
}

/* Plain decoding: the prompt, then N_GEN tokens one pass each. */
static void plain(llm170_model *m, const int32_t *prompt, int n, float temp, uint64_t seed, int32_t *out) {
    llm170_context *c = context(m);
    llm170_sampler *s = sampler(m, temp, seed);
    llm170_seq_batch b = {0, n, prompt, false};
    for (int i = 0; i < N_GEN; i++) {
        CHECK(llm170_decode(c, &b, 1) == 0);
        out[i] = llm170_sample(s, llm170_logits(c, 0));
        llm170_sampler_accept(s, out[i]);
        b = (llm170_seq_batch){0, 1, &out[i], false};
    }
    llm170_sampler_free(s);
    llm170_context_free(c);
}

/* The same through llm170_spec; accumulates the statistics. */
static void spec(llm170_model *m, const llm170_spec_params *p, const int32_t *prompt, int n, float temp,
                 uint64_t seed, int32_t *out, llm170_spec_stats *sum, llm170_context **keep_ctx,
                 spec_drafter *drafter) {
    llm170_context *c = context(m);
    llm170_sampler *s = sampler(m, temp, seed);
    llm170_spec *sp = NULL;
    CHECKF(llm170_spec_new(c, 0, p, &sp) == 0, "spec_new: %s", llm170_last_error());
    if (drafter) spec_set_drafter(sp, drafter);
    CHECKF(llm170_spec_prompt(sp, prompt, n) == 0, "spec_prompt: %s", llm170_last_error());
    for (int got = 0; got < N_GEN;) {
        int r = llm170_spec_next(sp, s, out + got, N_GEN - got);
        CHECKF(r >= 1 && r <= N_GEN - got, "spec_next: %d %s", r, llm170_last_error());
        if (r < 1) break;
        got += r;
    }
    llm170_spec_stats st;
    llm170_spec_get_stats(sp, &st);
    sum->tokens += st.tokens, sum->rounds += st.rounds, sum->drafted += st.drafted, sum->accepted += st.accepted;
    llm170_spec_free(sp);
    llm170_sampler_free(s);
    if (keep_ctx) *keep_ctx = c;
    else llm170_context_free(c);
}

/* Prompts: random tokens, and random tokens with a repeated piece (n-gram lookup finds something). */
static int make_prompt(int i, int V, int32_t *p) {
    rng r;
    rng_seed(&r, 100 + (uint64_t)i);
    int n = 8 + i * 8;
    for (int t = 0; t < n; t++) p[t] = (int32_t)(rng_u64(&r) % (uint64_t)V);
    if (i % 2) memcpy(p + n / 2, p, sizeof(int32_t) * (size_t)(n / 2));
    return n;
}

/* The oracle: plain decoding's tokens (want, after a prompt of plen), each wrong with chance 1/4. */
typedef struct oracle {
    spec_drafter base;
    const int32_t *want;
    int plen, V;
    rng r;
} oracle;

static int oracle_draft(spec_drafter *d, const int32_t *hist, int n, int k, int32_t *out, err *e) {
    (void)hist, (void)e;
    oracle *o = (oracle *)d;
    int m = 0;
    for (; m < k && n - o->plen + m < N_GEN; m++) {
        out[m] = o->want[n - o->plen + m];
        if (rng_u64(&o->r) % 4 == 0) out[m] = (out[m] + 1) % o->V;
    }
    return m;
}
static void oracle_kept(spec_drafter *d, int n_valid) { (void)d, (void)n_valid; }
static void oracle_destroy(spec_drafter *d) { free(d); }

static spec_drafter *oracle_new(const int32_t *want, int plen, int V, uint64_t seed) {
    oracle *o = calloc(1, sizeof *o);
    o->base = (spec_drafter){"oracle", false, oracle_draft, oracle_kept, NULL, oracle_destroy, NULL};
    o->want = want, o->plen = plen, o->V = V;
    rng_seed(&o->r, seed);
    return &o->base;
}

/* n_prompts prompts (drafters that are mostly rejected cost a round per token: fewer), k = 1..8, greedy, against plain decoding; plus two sampled runs at k = 4. */
static void exact(const char *what, llm170_model *m, llm170_spec_params p, llm170_spec_stats *sum, bool use_oracle,
                  int n_prompts) {
    int32_t prompt[PROMPT_MAX], want[N_GEN], got[N_GEN];
    int bad = 0;
    for (int i = 0; i < n_prompts; i++) {
        int n = make_prompt(i, llm170_model_n_vocab(m), prompt);
        plain(m, prompt, n, 0, 0, want);
        for (int ki = 0; ki < N_K; ki++) {
            const int k = k_list[ki];
            p.draft_max = k, p.draft_min = 1, p.adaptive = false;
            spec(m, &p, prompt, n, 0, 0, got, sum, NULL,
                 use_oracle ? oracle_new(want, n, llm170_model_n_vocab(m), (uint64_t)(k * 31 + i)) : NULL);
            if (memcmp(want, got, sizeof want) && bad++ < 3) {
                int at = 0;
                while (want[at] == got[at]) at++;
                CHECKF(0, "%s prompt %d k=%d: token %d is %d, plain decoding gives %d", what, i, k, at, got[at], want[at]);
            }
        }
        for (uint64_t seed = 1; seed <= 2 && !use_oracle; seed++) {
            plain(m, prompt, n, 0.9f, seed, want);
            p.draft_max = 4;
            spec(m, &p, prompt, n, 0.9f, seed, got, sum, NULL, NULL);
            CHECKF(!memcmp(want, got, sizeof want), "%s prompt %d sampled (seed %d): differs from plain", what, i, (int)seed);
        }
    }
    CHECKF(bad == 0, "%s: %d runs differ from plain decoding", what, bad);
    char ks[32] = "";
    for (int ki = 0; ki < N_K; ki++) snprintf(ks + strlen(ks), sizeof ks - strlen(ks), "%s%d", ki ? "," : "", k_list[ki]);
    printf("%s: %d prompts x k=%s%s: %d runs differ from plain; %lld rounds, %lld of %lld drafts kept\n", what,
           n_prompts, ks, use_oracle ? "" : " + sampled", bad, (long long)sum->rounds, (long long)sum->accepted,
           (long long)sum->drafted);
}

/* Both outcomes of a round must have happened for the comparison to mean anything. */
static void exercised(const char *what, const llm170_spec_stats *s) {
    CHECKF(s->accepted > 0 && s->accepted < s->drafted, "%s: %lld of %lld drafts kept: the test needs both kept and "
           "rejected drafts", what, (long long)s->accepted, (long long)s->drafted);
}

/* The qwen35 state after a generation with rollbacks equals decoding the kept tokens one by one. */
static void state_exact(llm170_model *m, llm170_spec_params p) {
    int32_t prompt[PROMPT_MAX], got[N_GEN];
    int n = make_prompt(3, llm170_model_n_vocab(m), prompt);
    llm170_spec_stats sum = {0};
    llm170_context *cs = NULL;
    p.draft_max = 5, p.adaptive = false;
    plain(m, prompt, n, 0, 0, got);
    spec(m, &p, prompt, n, 0, 0, got, &sum, &cs, oracle_new(got, n, llm170_model_n_vocab(m), 5));
    /* the sequence holds the prompt and every generated token but the last (pending) */
    llm170_context *cp = context(m);
    llm170_seq_batch b = {0, n, prompt, false};
    CHECK(llm170_decode(cp, &b, 1) == 0);
    for (int i = 0; i < N_GEN - 1; i++) {
        b = (llm170_seq_batch){0, 1, &got[i], false};
        CHECK(llm170_decode(cp, &b, 1) == 0);
    }
    CHECK(llm170_seq_len(cs, 0) == llm170_seq_len(cp, 0));
    size_t sz = llm170_seq_state_size(cs);
    char *a = malloc(sz), *bb = malloc(sz);
    CHECK(llm170_seq_save_state(cs, 0, a, sz) == 0 && llm170_seq_save_state(cp, 0, bb, sz) == 0);
    /* past the 16-byte header (lengths): the recurrent state, float for float */
    CHECKF(!memcmp(a + 16, bb + 16, sz - 16), "qwen35: recurrent state after speculative decoding differs from "
           "decoding the same tokens one by one");
    printf("qwen35: recurrent state (%zu bytes) after %lld rounds (%lld of %lld drafts kept): bit-identical to plain\n",
           sz - 16, (long long)sum.rounds, (long long)sum.accepted, (long long)sum.drafted);
    free(a);
    free(bb);
    llm170_context_free(cs);
    llm170_context_free(cp);
}

/* Caller-driven rounds (llm170_spec_begin / _propose / _commit, as llm170 serve drives them): the caller
 * prefills, decodes each span itself and picks from its rows; rollbacks on qwen35 leave the kept tokens owed
 * to the next span. Tokens equal plain decoding (greedy and sampled), and the state after the owed tokens are
 * decoded is bit-identical to decoding every token one by one. */
static void driven_exact(const char *what, llm170_model *m, float temp) {
    int32_t prompt[PROMPT_MAX], want[N_GEN], got[N_GEN], all[PROMPT_MAX + N_GEN];
    const int n = make_prompt(3, llm170_model_n_vocab(m), prompt), V = llm170_model_n_vocab(m);
    plain(m, prompt, n, temp, 9, want);
    llm170_spec_params p = llm170_spec_default_params();
    p.type = LLM170_SPEC_NGRAM, p.draft_max = 5, p.adaptive = false;
    llm170_context *c = context(m);
    llm170_sampler *smp = sampler(m, temp, 9);
    llm170_spec *sp = NULL;
    CHECKF(llm170_spec_new(c, 0, &p, &sp) == 0, "spec_new: %s", llm170_last_error());
    spec_set_drafter(sp, oracle_new(want, n, V, 77));
    llm170_seq_batch b = {0, n - 1, prompt, false};
    CHECK(llm170_decode(c, &b, 1) == 0);
    CHECKF(llm170_spec_begin(sp, prompt, n) == 0, "begin: %s", llm170_last_error());
    int owed_max = 1, rounds = 0, kept = 0;
    for (int g = 0; g < N_GEN;) {
        int32_t span[LLM170_SPEC_MAX_SPAN];
        int nd, ns = llm170_spec_propose(sp, N_GEN - g - 1, NULL, span, &nd);
        CHECKF(ns >= 1, "propose: %s", llm170_last_error());
        if (ns < 1) break;
        if (ns - nd > owed_max) owed_max = ns - nd;
        b = (llm170_seq_batch){0, ns, span, nd > 0};
        CHECK(llm170_decode(c, &b, 1) == 0);
        /* from the pending token's row on, while the pick equals the next draft (kmax keeps np <= N_GEN - g) */
        const int row0 = nd > 0 ? ns - nd - 1 : 0;
        int np = 0;
        for (;;) {
            int32_t x = llm170_sample(smp, llm170_logits(c, row0 + np));
            llm170_sampler_accept(smp, x);
            got[g + np++] = x;
            if (np <= nd && x == span[ns - nd + np - 1]) continue;
            break;
        }
        rounds += nd > 0, kept += np - 1;
        CHECKF(llm170_spec_commit(sp, got + g, np, 0.001) == 0, "commit: %s", llm170_last_error());
        g += np;
    }
    CHECKF(!memcmp(want, got, sizeof want), "%s: driven rounds differ from plain decoding", what);
    /* decode what the sequence still owes (but the last, pending token): then it must hold plain's state */
    memcpy(all, prompt, sizeof(int32_t) * (size_t)n);
    memcpy(all + n, got, sizeof want);
    const int held = llm170_seq_len(c, 0);
    if (held < n + N_GEN - 1) {
        b = (llm170_seq_batch){0, n + N_GEN - 1 - held, all + held, false};
        CHECK(llm170_decode(c, &b, 1) == 0);
    }
    /* the reference: the same prefill, then one token a pass (as the server without speculation) */
    llm170_context *cp = context(m);
    b = (llm170_seq_batch){0, n - 1, all, false};
    CHECK(llm170_decode(cp, &b, 1) == 0);
    for (int t = n - 1; t < n + N_GEN - 1; t++) {
        b = (llm170_seq_batch){0, 1, all + t, false};
        CHECK(llm170_decode(cp, &b, 1) == 0);
    }
    CHECK(llm170_seq_len(c, 0) == llm170_seq_len(cp, 0));
    size_t sz = llm170_seq_state_size(c);
    char *x = malloc(sz), *y = malloc(sz);
    CHECK(llm170_seq_save_state(c, 0, x, sz) == 0 && llm170_seq_save_state(cp, 0, y, sz) == 0);
    /* past the 16-byte header (lengths): the recurrent state, float for float */
    CHECKF(!memcmp(x + 16, y + 16, sz - 16), "%s: state after driven rounds differs from decoding the tokens", what);
    printf("%s: %d driven rounds (%d drafts kept, up to %d tokens owed to a span): tokens and state as plain\n", what,
           rounds, kept, owed_max);
    CHECKF(rounds > 0 && kept > 0, "%s: no drafts kept", what);
    free(x), free(y);
    llm170_spec_free(sp);
    llm170_sampler_free(smp);
    llm170_context_free(cp);
    llm170_context_free(c);
}

/* Drafts that are never kept: adaptive k turns speculation off after a few rounds (re-probing rarely). */
static void adaptive_off(llm170_model *m, llm170_model *other) {
    int32_t prompt[PROMPT_MAX], got[N_GEN];
    int n = make_prompt(0, llm170_model_n_vocab(m), prompt);
    llm170_spec_params p = llm170_spec_default_params();
    p.type = LLM170_SPEC_DRAFT, p.draft_model = other;
    llm170_spec_stats sum = {0};
    spec(m, &p, prompt, n, 0, 0, got, &sum, NULL, NULL);
    printf("adaptive, a draft model that disagrees: %lld rounds for %lld tokens (%lld of %lld drafts kept)\n",
           (long long)sum.rounds, (long long)sum.tokens, (long long)sum.accepted, (long long)sum.drafted);
    CHECKF(sum.rounds <= 12, "adaptive k should stop speculating when drafts are never kept: %lld rounds",
           (long long)sum.rounds);
}

int main(void) {
    llm170_model *llama = make("tiny-llama", "f32", 1), *other = make("tiny-llama", "f32", 2);
    llm170_model *qwen = make("tiny-qwen35", "f32", 1);
    if (!llama || !other || !qwen) return check_report("test_spec");
    llm170_spec_params p = llm170_spec_default_params();
    llm170_spec_stats s_ngram = {0}, s_self = {0}, s_other = {0}, s_qwen = {0}, s_lo = {0}, s_qo = {0};

    p.type = LLM170_SPEC_NGRAM;
    exact("llama ngram", llama, p, &s_ngram, false, N_PROMPTS);
    exercised("llama ngram", &s_ngram);
    exact("llama oracle", llama, p, &s_lo, true, N_PROMPTS);
    exercised("llama oracle", &s_lo);
    p.type = LLM170_SPEC_DRAFT, p.draft_model = llama;
    exact("llama draft (the target itself)", llama, p, &s_self, false, N_PROMPTS);
    exercised("llama draft", &s_self); /* greedy: all kept; sampled: greedy drafts often rejected */
    p.draft_model = other;
    exact("llama draft (other weights)", llama, p, &s_other, false, 2);
    p.type = LLM170_SPEC_NGRAM, p.draft_model = NULL;
    exact("qwen35 ngram", qwen, p, &s_qwen, false, N_PROMPTS);
    exact("qwen35 oracle", qwen, p, &s_qo, true, N_PROMPTS);
    exercised("qwen35 oracle", &s_qo);
    p.type = LLM170_SPEC_MTP;
    exact("qwen35 mtp", qwen, p, &s_qwen, false, 3);
    state_exact(qwen, p);
    driven_exact("qwen35 driven, greedy", qwen, 0);
    driven_exact("qwen35 driven, sampled", qwen, 0.9f);
    driven_exact("llama driven, greedy", llama, 0);
    adaptive_off(llama, other);

    /* errors */
    llm170_context *c = context(llama);
    llm170_spec *sp = NULL;
    p = llm170_spec_default_params();
    p.type = LLM170_SPEC_MTP;
    CHECK(llm170_spec_new(c, 0, &p, &sp) != 0 && strstr(llm170_last_error(), "no MTP block"));
    p.type = LLM170_SPEC_DRAFT, p.draft_model = qwen;
    CHECK(llm170_spec_new(c, 0, &p, &sp) != 0 && strstr(llm170_last_error(), "vocabulary"));
    printf("draft of another vocabulary: %s\n", llm170_last_error());
    p.draft_model = NULL;
    CHECK(llm170_spec_new(c, 0, &p, &sp) != 0 && strstr(llm170_last_error(), "--model-draft"));
    CHECK(llm170_spec_type_from_name("ngram") == LLM170_SPEC_NGRAM && llm170_spec_type_from_name("x") == -1);
    llm170_context_free(c);

    llm170_model_free(llama);
    llm170_model_free(other);
    llm170_model_free(qwen);
    return check_report("test_spec");
}
