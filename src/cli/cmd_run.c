/* llm170 run: an interactive chat in the terminal with a model, through the model's own chat template.
 *
 * Each turn renders the whole conversation with llm170_chat_render (add_generation_prompt), tokenizes it,
 * and compares the tokens with those already in the KV cache: when the cache is a prefix of the new
 * rendering (the usual case: the reply's tokens plus the end-of-turn token the template appends), only
 * the new tokens are prefilled; otherwise the sequence is reset and the whole conversation prefilled.
 * Replies stream through the streaming detokenizer (never half a UTF-8 character) and end at the model's
 * end-of-turn tokens (eos, eot, <|im_end|>, <end_of_turn>, ...: llm170_token_is_eog). Ctrl-C stops the
 * current reply (the partial reply stays in the conversation); Ctrl-C again at the prompt, /exit or EOF
 * on stdin quits. --prompt gives one answer and exits.
 *
 * As llama-cli and ollama do:
 * - A file without a chat template (a base model) runs as plain text continuation: the turns are joined
 *   as they are, each reply is at most 256 tokens unless -n says otherwise, and a note says so. (A chat
 *   template borrowed from another family only made base models loop.)
 * - When the conversation no longer leaves a quarter of the context for the reply, the oldest turns are
 *   dropped (the system prompt is kept) and the conversation re-prefilled; if the context fills during a
 *   reply, the same happens with the reply so far kept, and generation goes on.
 * - --verbose prints prompt and generation rates after each reply, /stats those of the last one.
 *
 * --model takes a file or a short name (qwen2.5-coder-0.5b, ...; --list shows them), fetched on first use
 * by scripts/get-model.sh (cli/model_name.h).
 *
 * Loading maps the file; the pages come in on first use. To make that cost visible (and pay it before the
 * first reply) the file is read through once, with a progress bar on stderr if that takes over a second. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/spec_cli.h"
#include "cli/model_name.h"
#include "llm170.h"

static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig) {
    (void)sig;
    g_interrupted = 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- a growable string (the conversation as JSON, a reply's text) ---- */

typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf;

static bool sbuf_add(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) return false;
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
    return true;
}

static bool sbuf_str(sbuf *b, const char *s) { return sbuf_add(b, s, strlen(s)); }

/* Appends s as a JSON string literal. */
static bool sbuf_json(sbuf *b, const char *s, size_t n) {
    bool ok = sbuf_str(b, "\"");
    for (size_t i = 0; ok && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') snprintf(esc, sizeof esc, "\\%c", c);
        else if (c == '\n') snprintf(esc, sizeof esc, "\\n");
        else if (c == '\t') snprintf(esc, sizeof esc, "\\t");
        else if (c == '\r') snprintf(esc, sizeof esc, "\\r");
        else if (c < 0x20) snprintf(esc, sizeof esc, "\\u%04x", c);
        else {
            ok = sbuf_add(b, (const char *)&s[i], 1);
            continue;
        }
        ok = sbuf_str(b, esc);
    }
    return ok && sbuf_str(b, "\"");
}

/* ---- model file read-ahead with a progress bar ---- */

static void preload(const char *path) {
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        if (fd >= 0) close(fd);
        return; /* llm170_model_load reports the real error */
    }
    /* A file larger than half the RAM would only evict itself: leave paging to the first decode. */
    double ram = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if ((double)st.st_size > ram / 2) {
        close(fd);
        return;
    }
    posix_fadvise(fd, 0, st.st_size, POSIX_FADV_SEQUENTIAL);
    enum { CHUNK = 8 << 20 };
    char *buf = malloc(CHUNK);
    double t0 = now_s();
    bool shown = false;
    double last = 0;
    off_t done = 0;
    while (buf && !g_interrupted) {
        ssize_t r = read(fd, buf, CHUNK);
        if (r <= 0) break;
        done += r;
        double t = now_s() - t0;
        /* no bar for a load under a second; then at most 10 updates a second, and always the last */
        if ((t > 1.0 && t - last > 0.1) || (shown && done == st.st_size)) {
            last = t;
            int pct = st.st_size ? (int)(100.0 * (double)done / (double)st.st_size) : 100;
            char bar[41];
            for (int i = 0; i < 40; i++) bar[i] = i < pct * 40 / 100 ? '#' : '.';
            bar[40] = 0;
            fprintf(stderr, "\rloading [%s] %3d%% %.1f / %.1f GB", bar, pct, (double)done / 1e9, (double)st.st_size / 1e9);
            shown = true;
        }
    }
    if (shown) fprintf(stderr, "\n");
    free(buf);
    close(fd);
}

/* ---- the chat ---- */

enum { RAW_N_PREDICT = 256 };
static const char RAW_TEMPLATE[] = "{% for m in messages %}{{ m['content'] }}{% endfor %}";

typedef struct message {
    char *role, *text;
    size_t len;
} message;

/* The figures of one reply (--verbose, /stats). */
typedef struct reply_stats {
    int n_prompt, n_reused, n_gen;
    double t_prompt, t_gen;
    char stop[96];
} reply_stats;

typedef struct chat {
    llm170_model *model;
    llm170_context *ctx;
    llm170_sampler_params sp;
    const char *template_override; /* NULL: the file's template */
    int n_ctx, n_predict;
    bool verbose;
    bool no_reuse;   /* re-prefill the whole conversation every turn (to check reuse against) */
    message *msgs;   /* the conversation; msgs[0] is the system prompt when has_system */
    int n_msgs, cap_msgs;
    bool has_system;
    int32_t *cached; /* tokens in the KV cache of sequence 0, in order */
    int n_cached;
    int32_t *gen;    /* the reply's tokens so far */
    int32_t bos;     /* -1 if the vocabulary adds none */
    reply_stats last;
    spec_cli sc;
    llm170_spec *spec; /* --spec: replies through llm170_spec (NULL: plain decoding) */
} chat;

static bool add_message(chat *c, const char *role, const char *text, size_t n) {
    if (c->n_msgs == c->cap_msgs) {
        int cap = c->cap_msgs ? 2 * c->cap_msgs : 8;
        message *m = realloc(c->msgs, (size_t)cap * sizeof *m);
        if (!m) return false;
        c->msgs = m;
        c->cap_msgs = cap;
    }
    message *m = &c->msgs[c->n_msgs];
    m->role = strdup(role);
    m->text = malloc(n + 1);
    if (!m->role || !m->text) {
        free(m->role);
        free(m->text);
        return false;
    }
    memcpy(m->text, text, n);
    m->text[n] = 0;
    m->len = n;
    c->n_msgs++;
    return true;
}

/* Forgets messages [from, to) of the conversation. */
static void drop_messages(chat *c, int from, int to) {
    for (int i = from; i < to; i++) {
        free(c->msgs[i].role);
        free(c->msgs[i].text);
    }
    if (to <= from) return;
    memmove(c->msgs + from, c->msgs + to, (size_t)(c->n_msgs - to) * sizeof *c->msgs);
    c->n_msgs -= to - from;
}

/* Drops the oldest turn (a user message and the replies up to the next user message), never the system
 * prompt nor the last message (the one being answered). Returns the number of messages dropped. */
static int drop_oldest_turn(chat *c) {
    int first = c->has_system ? 1 : 0, end = first + 1;
    while (end < c->n_msgs - 1 && strcmp(c->msgs[end].role, "user")) end++;
    if (end >= c->n_msgs) return 0; /* only the message being answered is left */
    drop_messages(c, first, end);
    return end - first;
}

/* Renders the conversation plus the generation prompt and tokenizes it. */
static int render_tokens(chat *c, int32_t **ids, size_t *n) {
    sbuf json = {0};
    bool ok = sbuf_str(&json, "[");
    for (int i = 0; ok && i < c->n_msgs; i++)
        ok = (i == 0 || sbuf_str(&json, ", ")) && sbuf_str(&json, "{\"role\": \"") && sbuf_str(&json, c->msgs[i].role) &&
             sbuf_str(&json, "\", \"content\": ") && sbuf_json(&json, c->msgs[i].text, c->msgs[i].len) &&
             sbuf_str(&json, "}");
    if (!ok || !sbuf_str(&json, "]")) {
        free(json.s);
        return -1;
    }
    char *text = NULL;
    size_t tlen = 0;
    int rc = llm170_chat_render(c->model, json.s, NULL, true, -1, c->template_override, &text, &tlen);
    free(json.s);
    if (rc) return rc;
    rc = llm170_tokenize(c->model, text, tlen, false, true, ids, n);
    free(text);
    if (rc) return rc;
    /* Templates that do not write the BOS text still need the BOS the vocabulary asks for. */
    if (c->bos >= 0 && (*n == 0 || (*ids)[0] != c->bos)) {
        int32_t *p = realloc(*ids, (*n + 1) * sizeof *p);
        if (!p) return -1;
        memmove(p + 1, p, *n * sizeof *p);
        p[0] = c->bos;
        *ids = p;
        (*n)++;
    }
    return 0;
}

/* Renders the conversation, dropping its oldest turns while it and `extra` more tokens would leave less
 * than `room` of the context free. Returns 0 (fits), 1 (does not fit even alone), -1 on error. */
static int render_fitting(chat *c, int extra, int room, const char *when, int32_t **ids, size_t *n) {
    int dropped = 0;
    for (;;) {
        free(*ids);
        *ids = NULL;
        if (render_tokens(c, ids, n)) return -1;
        if ((int)*n + extra + room <= c->n_ctx) break;
        int k = drop_oldest_turn(c);
        if (k == 0) break;
        dropped += k;
    }
    if (dropped)
        fprintf(stderr, "\n[context %s: dropped the %d oldest message%s to make room%s]\n", when, dropped,
                dropped > 1 ? "s" : "",
                c->n_msgs > 1 && !strcmp(c->msgs[0].role, "system") ? "; the system prompt is kept" : "");
    return (int)*n + extra + 1 > c->n_ctx ? 1 : 0;
}

/* Decodes ids[0..n) after the cache, in chunks so that Ctrl-C can stop a long prefill; the cache record
 * follows what was really decoded. Returns 0, 1 if interrupted, -1 on error. */
static int feed(chat *c, const int32_t *ids, int n) {
    enum { CHUNK = 256 };
    for (int i = 0; i < n; i += CHUNK) {
        if (g_interrupted) return 1;
        int k = n - i < CHUNK ? n - i : CHUNK;
        llm170_seq_batch b = {.seq = 0, .n_tokens = k, .tokens = ids + i};
        if (llm170_decode(c->ctx, &b, 1)) return -1;
        memcpy(c->cached + c->n_cached, ids + i, (size_t)k * sizeof *ids);
        c->n_cached += k;
    }
    return 0;
}

/* The context is full in the middle of a reply: drop the oldest turns, prefill the rest and the reply so
 * far again (half the context left free, as llama.cpp's context shift discards half). Returns 0, 1 if
 * nothing can be dropped (the reply alone fills the context), -1 on error. */
static int make_room(chat *c, int n_gen) {
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = render_fitting(c, n_gen, c->n_ctx / 2, "full during the reply", &ids, &n);
    if (rc == 0 && (int)n + n_gen + c->n_ctx / 8 > c->n_ctx) rc = 1; /* too little gained to go on */
    if (rc == 0) {
        llm170_seq_reset(c->ctx, 0);
        c->n_cached = 0;
        rc = feed(c, ids, (int)n);
        if (rc == 0) rc = feed(c, c->gen, n_gen);
        if (rc > 0) rc = 0; /* interrupted: the reply loop sees it */
    }
    free(ids);
    return rc;
}

static void print_stats(const reply_stats *s) {
    fprintf(stderr, "[prefill %d tokens (%d reused) in %.2f s, %.1f tok/s; generated %d tokens in %.2f s, %.1f tok/s; %s]\n",
            s->n_prompt, s->n_reused, s->t_prompt, s->t_prompt > 0 ? s->n_prompt / s->t_prompt : 0.0, s->n_gen,
            s->t_gen, s->t_gen > 0 ? s->n_gen / s->t_gen : 0.0, s->stop);
}

/* reply() with --spec: llm170_spec_prompt reuses the cached prefix itself; each emitted token but the
 * last (pending) is in the cache. A full context ends the reply (no dropping of old turns mid-reply). */
static int reply_spec(chat *c, int32_t *ids, int n) {
    reply_stats *st = &c->last;
    int same = 0, rc = 0, n_gen = 0;
    while (same < c->n_cached && same < n && c->cached[same] == ids[same]) same++;
    if (c->no_reuse) llm170_seq_reset(c->ctx, 0);
    st->n_reused = c->no_reuse ? 0 : same;
    st->n_prompt = n - st->n_reused;
    double t0 = now_s();
    if (llm170_spec_prompt(c->spec, ids, n)) {
        fprintf(stderr, "llm170 run: %s\n", llm170_last_error());
        free(ids);
        return -1;
    }
    memcpy(c->cached, ids, sizeof(int32_t) * (size_t)n);
    c->n_cached = n;
    free(ids);
    double t1 = now_s();
    st->t_prompt = t1 - t0;
    llm170_sampler *s = NULL;
    llm170_detok *d = NULL;
    sbuf text = {0};
    const char *piece;
    size_t plen;
    int32_t out[32];
    snprintf(st->stop, sizeof st->stop, "stopped (Ctrl-C)");
    if (llm170_sampler_new(c->model, &c->sp, &s) || llm170_detok_new(c->model, false, &d)) rc = -1;
    for (int i = 0; !rc && i < c->n_cached; i++) llm170_sampler_accept(s, c->cached[i]);
    for (bool stop = false; !rc && !stop && !g_interrupted;) {
        int cap = c->n_ctx - c->n_cached - 1 < 32 ? c->n_ctx - c->n_cached - 1 : 32;
        if (c->n_predict >= 0 && c->n_predict - n_gen < cap) cap = c->n_predict - n_gen;
        if (cap <= 0) {
            if (c->n_predict >= 0 && n_gen >= c->n_predict)
                snprintf(st->stop, sizeof st->stop, "length limit (%d tokens, -n)", c->n_predict);
            else snprintf(st->stop, sizeof st->stop, "context full");
            break;
        }
        int k = llm170_spec_next(c->spec, s, out, cap);
        if (k < 0) rc = -1;
        for (int i = 0; i < k && !rc; i++) {
            c->cached[c->n_cached++] = out[i];
            if (llm170_token_is_eog(c->model, out[i])) {
                snprintf(st->stop, sizeof st->stop, "end of turn (token %d)", out[i]);
                stop = true;
                break;
            }
            if (llm170_detok_push(d, out[i], &piece, &plen) || !sbuf_add(&text, piece, plen)) rc = -1;
            else fwrite(piece, 1, plen, stdout);
            c->gen[n_gen++] = out[i];
        }
        fflush(stdout);
    }
    if (c->n_cached > n) c->n_cached--; /* the last emitted token is not decoded */
    if (rc == 0 && llm170_detok_flush(d, &piece, &plen) == 0 && sbuf_add(&text, piece, plen))
        fwrite(piece, 1, plen, stdout);
    if (rc < 0) fprintf(stderr, "\nllm170 run: %s\n", llm170_last_error());
    if (g_interrupted) fprintf(stderr, "\n[stopped]");
    printf("\n");
    fflush(stdout);
    if (rc == 0 && !add_message(c, "assistant", text.s ? text.s : "", text.len)) rc = -1;
    st->n_gen = n_gen;
    st->t_gen = now_s() - t1;
    if (c->verbose) {
        print_stats(st);
        llm170_spec_stats ss;
        llm170_spec_get_stats(c->spec, &ss);
        spec_cli_report(stderr, &c->sc, &ss);
    }
    free(text.s);
    llm170_detok_free(d);
    llm170_sampler_free(s);
    return rc;
}

/* One assistant turn: prefill what is new, stream the reply to stdout, append it to the conversation.
 * Returns 0 (done or stopped by Ctrl-C), 1 if the conversation does not fit the context, or -1 on error
 * (message printed). */
static int reply(chat *c) {
    int32_t *ids = NULL;
    size_t n = 0;
    reply_stats *st = &c->last;
    *st = (reply_stats){0};
    int rc = render_fitting(c, 0, c->n_ctx / 4, "three-quarters full", &ids, &n);
    if (rc) {
        if (rc > 0)
            fprintf(stderr, "llm170 run: the conversation (%zu tokens) no longer fits the context of %d tokens; "
                            "/reset starts over, --ctx-size N gives more room\n", n, c->n_ctx);
        else
            fprintf(stderr, "llm170 run: %s\n", llm170_last_error());
        free(ids);
        return rc;
    }
    if (c->spec) return reply_spec(c, ids, (int)n);
    int same = 0;
    while (same < c->n_cached && same < (int)n && c->cached[same] == ids[same]) same++;
    if (same < c->n_cached || same == (int)n || c->no_reuse) {
        /* the rendered history changed (a template that rewrites past turns): start the sequence over */
        llm170_seq_reset(c->ctx, 0);
        c->n_cached = same = 0;
    }
    st->n_reused = same;
    st->n_prompt = (int)n - same;
    double t0 = now_s();
    rc = feed(c, ids + same, (int)n - same);
    free(ids);
    if (rc < 0) {
        fprintf(stderr, "llm170 run: %s\n", llm170_last_error());
        return -1;
    }
    double t1 = now_s();
    st->t_prompt = t1 - t0;
    llm170_sampler *s = NULL;
    llm170_detok *d = NULL;
    sbuf text = {0};
    int n_gen = 0;
    snprintf(st->stop, sizeof st->stop, "stopped (Ctrl-C)");
    if (llm170_sampler_new(c->model, &c->sp, &s) || llm170_detok_new(c->model, false, &d)) {
        fprintf(stderr, "llm170 run: %s\n", llm170_last_error());
        rc = -1;
        goto out;
    }
    for (int i = 0; i < c->n_cached; i++) llm170_sampler_accept(s, c->cached[i]);
    const char *piece;
    size_t plen;
    while (rc == 0 && !g_interrupted) {
        if (c->n_predict >= 0 && n_gen >= c->n_predict) {
            snprintf(st->stop, sizeof st->stop, "length limit (%d tokens, -n)", c->n_predict);
            break;
        }
        if (c->n_cached + 1 >= c->n_ctx && (rc = make_room(c, n_gen)) != 0) {
            if (rc > 0) fprintf(stderr, "\n[context full: %d tokens, and no older turn is left to drop]", c->n_ctx);
            snprintf(st->stop, sizeof st->stop, "context full");
            rc = rc > 0 ? 0 : -1;
            break;
        }
        int32_t tok = llm170_sample(s, llm170_logits(c->ctx, 0));
        llm170_sampler_accept(s, tok);
        /* The end-of-turn token is not decoded: the next turn's rendering brings it, so the prefix stays
         * unchanged. */
        if (llm170_token_is_eog(c->model, tok)) {
            char *name = NULL;
            size_t nlen = 0;
            if (llm170_detokenize(c->model, &tok, 1, true, &name, &nlen)) name = NULL;
            snprintf(st->stop, sizeof st->stop, "end of turn (%.*s, token %d)", name ? (int)nlen : 0,
                     name ? name : "", tok);
            free(name);
            break;
        }
        if (llm170_detok_push(d, tok, &piece, &plen) || !sbuf_add(&text, piece, plen)) {
            rc = -1;
            break;
        }
        fwrite(piece, 1, plen, stdout);
        fflush(stdout);
        c->gen[n_gen++] = tok;
        rc = feed(c, &tok, 1);
        if (rc > 0) rc = 0; /* interrupted: the loop ends */
    }
    if (rc >= 0 && llm170_detok_flush(d, &piece, &plen) == 0 && sbuf_add(&text, piece, plen))
        fwrite(piece, 1, plen, stdout);
    if (rc < 0) fprintf(stderr, "\nllm170 run: %s\n", llm170_last_error());
    if (g_interrupted) fprintf(stderr, "\n[stopped]");
    printf("\n");
    fflush(stdout);
    if (rc >= 0 && !add_message(c, "assistant", text.s ? text.s : "", text.len)) rc = -1;
    st->n_gen = n_gen;
    st->t_gen = now_s() - t1;
    if (c->verbose) print_stats(st);
    rc = rc < 0 ? -1 : 0;
out:
    free(text.s);
    llm170_detok_free(d);
    llm170_sampler_free(s);
    return rc;
}

/* Reads a line from stdin without the newline; returns 1 line, 0 EOF, -1 interrupted by Ctrl-C. */
static int read_line(char **line, size_t *cap) {
    errno = 0;
    ssize_t n = getline(line, cap, stdin);
    if (n < 0) {
        if (errno == EINTR || g_interrupted) {
            clearerr(stdin);
            return -1;
        }
        return 0;
    }
    while (n > 0 && ((*line)[n - 1] == '\n' || (*line)[n - 1] == '\r')) (*line)[--n] = 0;
    return 1;
}

static void usage(void) {
    fprintf(stderr,
            "usage: llm170 run --model M [--prompt TEXT] [--system TEXT] [--ctx-size N] [--threads N] [--device D]\n"
            "         [--cache-type-k T] [--cache-type-v T]\n"
            "         [--n-predict N] [--template chatml|llama3|gemma|raw|FILE.jinja] [--verbose] [--no-reuse]\n"
            "         [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty X]\n"
            "         [--presence-penalty X] [--frequency-penalty X] [--repeat-last-n N] [--seed N]\n"
            "         %s\n"
            "       llm170 run --list\n"
            "  M: a .gguf file or a short name (qwen2.5-coder-0.5b, ...; --list shows them), fetched on first use\n"
            "  sampling defaults (llama.cpp's): --temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05; --temp 0 is greedy\n"
            "  --cache-type-k/-v (-ctk/-ctv): f32, f16, bf16 or q8_0 (default: the device's, f32 on the CPU)\n",
            spec_cli_usage());
}

static void chat_help(void) {
    fprintf(stderr, "  /exit (or /quit, Ctrl-D) quits; /reset forgets the conversation; /stats shows the last reply's\n"
                    "  prompt and generation rates; Ctrl-C stops a reply\n");
}

static void reset_conversation(chat *c) {
    drop_messages(c, c->has_system ? 1 : 0, c->n_msgs);
}

int cmd_run(int argc, char **argv) {
    const char *model_arg = NULL, *prompt = NULL, *system_text = NULL, *tmpl = NULL;
    char *path = NULL;
    int rc = 1, n_ctx = 0, ctk = 0, ctv = 0;
    bool seeded = false;
    llm170_model_params mp = llm170_model_default_params();
    mp.n_threads = args_default_threads();
    chat c = {.n_predict = -2, .bos = -1}; /* -2: not given */
    /* llama.cpp's chat defaults: sampled, so that small models do not loop */
    c.sp = llm170_sampler_default_params();
    c.sp.temperature = 0.8f;
    c.sp.top_k = 40;
    c.sp.top_p = 0.95f;
    c.sp.min_p = 0.05f;
    spec_cli_init(&c.sc);
    char *tmpl_text = NULL, *line = NULL;
    size_t line_cap = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        bool ok = true;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        }
        if (!strcmp(a, "--list")) return model_name_list("run");
        if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
            c.verbose = true;
            continue;
        }
        if (!strcmp(a, "--no-reuse")) {
            c.no_reuse = true;
            continue;
        }
        if (!(v = args_value("run", argc, argv, &i))) goto usage_error;
        if (spec_cli_flag("run", a, v, &c.sc, &ok)) {
        } else if (!strcmp(a, "--model") || !strcmp(a, "-m")) model_arg = v;
        else if (!strcmp(a, "--prompt") || !strcmp(a, "-p")) prompt = v;
        else if (!strcmp(a, "--system") || !strcmp(a, "-sys")) system_text = v;
        else if (!strcmp(a, "--template")) tmpl = v;
        else if (!strcmp(a, "--n-predict") || !strcmp(a, "-n")) ok = args_int("run", a, v, -1, 1 << 24, &c.n_predict);
        else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) ok = args_int("run", a, v, 1, 1024, &mp.n_threads);
        else if (!strcmp(a, "--device")) mp.device = v;
        else if (!strcmp(a, "--ctx-size") || !strcmp(a, "-c")) ok = args_int("run", a, v, 16, 1 << 24, &n_ctx);
        else if (args_cache_flags("run", a, v, &ctk, &ctv, &ok)) {
        }
        else if (!strcmp(a, "--temp")) ok = args_float("run", a, v, 0, 100, &c.sp.temperature);
        else if (!strcmp(a, "--top-k")) ok = args_int("run", a, v, 0, 1 << 24, &c.sp.top_k);
        else if (!strcmp(a, "--top-p")) ok = args_float("run", a, v, 1e-9, 1, &c.sp.top_p);
        else if (!strcmp(a, "--min-p")) ok = args_float("run", a, v, 0, 1, &c.sp.min_p);
        else if (!strcmp(a, "--repeat-penalty")) ok = args_float("run", a, v, 1e-3, 100, &c.sp.repeat_penalty);
        else if (!strcmp(a, "--presence-penalty")) ok = args_float("run", a, v, -100, 100, &c.sp.presence_penalty);
        else if (!strcmp(a, "--frequency-penalty")) ok = args_float("run", a, v, -100, 100, &c.sp.frequency_penalty);
        else if (!strcmp(a, "--repeat-last-n")) ok = args_int("run", a, v, 0, 1 << 20, &c.sp.penalty_last_n);
        else if (!strcmp(a, "--seed")) {
            ok = args_u64("run", a, v, &c.sp.seed);
            seeded = true;
        } else {
            fprintf(stderr, "llm170 run: unknown flag '%s'\n", a);
            goto usage_error;
        }
        if (!ok) {
            rc = 2;
            goto done;
        }
    }
    if (!model_arg) {
        fprintf(stderr, "llm170 run: --model is required (a .gguf file, or a short name such as qwen2.5-coder-0.5b; "
                        "--list shows them)\n");
        goto usage_error;
    }
    if (!seeded) c.sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

    struct sigaction sa = {0};
    sa.sa_handler = on_sigint; /* no SA_RESTART: a Ctrl-C at the prompt must interrupt getline */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    if (model_name_resolve("run", model_arg, &path)) goto done;
    preload(path);
    if (g_interrupted) goto done;
    if (llm170_model_load(path, &mp, &c.model)) {
        fprintf(stderr, "llm170 run: %s\n", llm170_last_error());
        goto done;
    }
    if (!spec_cli_load("run", &c.sc, &mp)) goto done;
    bool raw = tmpl && !strcmp(tmpl, "raw");
    if (tmpl && !raw) {
        /* a file holding a Jinja template, else the name of a built-in one */
        FILE *f = fopen(tmpl, "rb");
        if (f) {
            sbuf t = {0};
            char chunk[4096];
            size_t k;
            while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) sbuf_add(&t, chunk, k);
            fclose(f);
            tmpl_text = t.s;
        }
        c.template_override = tmpl_text ? tmpl_text : tmpl;
    }
    if (!tmpl) {
        /* a file with no chat template of its own (a base model) continues plain text */
        char *probe = NULL;
        size_t plen = 0;
        raw = llm170_chat_render(c.model, "[{\"role\": \"user\", \"content\": \"hi\"}]", NULL, true, -1, NULL, &probe,
                                 &plen) != 0;
        free(probe);
    }
    if (raw) {
        /* plain text completion: the turns are concatenated as they are, each reply bounded */
        c.template_override = RAW_TEMPLATE;
        if (c.n_predict == -2) c.n_predict = RAW_N_PREDICT;
        if (!tmpl)
            fprintf(stderr,
                    "note: %s has no chat template (a base model?): plain text continuation of what you type, each "
                    "reply at most %d tokens (-n N). --template chatml|llama3|gemma forces a chat format.\n",
                    path, c.n_predict);
    }
    if (c.n_predict == -2) c.n_predict = -1;
    int32_t *bos = NULL;
    size_t n_bos = 0;
    if (llm170_tokenize(c.model, "", 0, true, false, &bos, &n_bos)) {
        fprintf(stderr, "llm170 run: %s\n", llm170_last_error());
        goto done;
    }
    if (n_bos == 1) c.bos = bos[0];
    free(bos);

    int train = llm170_model_n_ctx_train(c.model);
    c.n_ctx = n_ctx ? n_ctx : (train > 0 && train < 4096 ? train : 4096);
    llm170_context_params cp = {.n_seq = 1, .n_ctx = c.n_ctx, .n_batch = 512, .cache_type_k = ctk, .cache_type_v = ctv};
    c.cached = malloc((size_t)c.n_ctx * sizeof *c.cached);
    c.gen = malloc((size_t)c.n_ctx * sizeof *c.gen);
    if (!c.cached || !c.gen || llm170_context_new(c.model, &cp, &c.ctx)) {
        fprintf(stderr, "llm170 run: %s\n", c.cached && c.gen ? llm170_last_error() : "out of memory");
        goto done;
    }
    if (c.sc.p.type != LLM170_SPEC_NONE && llm170_spec_new(c.ctx, 0, &c.sc.p, &c.spec)) {
        fprintf(stderr, "llm170 run: %s\n", llm170_last_error());
        goto done;
    }
    if (system_text) {
        if (!add_message(&c, "system", system_text, strlen(system_text))) goto done;
        c.has_system = true;
    }

    if (prompt) {
        if (!add_message(&c, "user", prompt, strlen(prompt))) goto done;
        rc = reply(&c) ? 1 : 0;
        goto done;
    }
    char desc[128];
    llm170_model_desc(c.model, desc, sizeof desc);
    fprintf(stderr, "llm170 run: %s, context %d tokens. /exit quits, /reset starts over, /stats shows speed, /help; "
                    "Ctrl-C stops a reply.\n", desc, c.n_ctx);
    bool last_was_interrupt = false, answered = false;
    for (;;) {
        printf("> ");
        fflush(stdout);
        g_interrupted = 0;
        int r = read_line(&line, &line_cap);
        if (r == 0) {
            printf("\n");
            break;
        }
        if (r < 0) {
            if (last_was_interrupt) {
                printf("\n");
                break;
            }
            printf("\n(Ctrl-C again or /exit to quit)\n");
            last_was_interrupt = true;
            continue;
        }
        last_was_interrupt = false;
        if (!strcmp(line, "/exit") || !strcmp(line, "/quit") || !strcmp(line, "/bye")) break;
        if (!strcmp(line, "/reset") || !strcmp(line, "/clear")) {
            reset_conversation(&c);
            fprintf(stderr, "[conversation cleared]\n");
            continue;
        }
        if (!strcmp(line, "/stats")) {
            if (answered) print_stats(&c.last);
            else fprintf(stderr, "[no reply yet]\n");
            continue;
        }
        if (!strcmp(line, "/help") || !strcmp(line, "/?")) {
            chat_help();
            continue;
        }
        if (!line[0]) continue;
        int keep = c.n_msgs;
        if (!add_message(&c, "user", line, strlen(line))) goto done;
        int rr = reply(&c);
        if (rr < 0) goto done;
        if (rr > 0) drop_messages(&c, keep < c.n_msgs ? keep : c.n_msgs - 1, c.n_msgs); /* did not fit: forget it */
        answered |= rr == 0;
    }
    rc = 0;
    goto done;
usage_error:
    usage();
    rc = 2;
done:
    free(line);
    free(tmpl_text);
    drop_messages(&c, 0, c.n_msgs);
    free(c.msgs);
    free(c.cached);
    free(c.gen);
    free(path);
    llm170_spec_free(c.spec);
    llm170_context_free(c.ctx);
    spec_cli_free(&c.sc);
    llm170_model_free(c.model);
    return rc;
}
