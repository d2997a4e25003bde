/* llm170 run: an interactive chat in the terminal with a model, through the model's own chat template.
 *
 * Each turn renders the whole conversation with llm170_chat_render (add_generation_prompt), tokenizes it,
 * and compares the tokens with those already in the KV cache: when the cache is a prefix of the new
 * rendering (the usual case: the reply's tokens plus the end-of-turn token the template appends), only
 * the new tokens are prefilled; otherwise the sequence is reset and the whole conversation prefilled.
 * Replies stream through the streaming detokenizer (never half a UTF-8 character). Ctrl-C stops the
 * current reply (the partial reply stays in the conversation); Ctrl-C again at the prompt, /exit or EOF
 * on stdin quits. --prompt gives one answer and exits.
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

/* Appends {"role": ROLE, "content": TEXT} to the messages array being built in b (without brackets). */
static bool add_message(sbuf *b, const char *role, const char *text, size_t n) {
    return (b->len == 0 || sbuf_str(b, ", ")) && sbuf_str(b, "{\"role\": \"") && sbuf_str(b, role) &&
           sbuf_str(b, "\", \"content\": ") && sbuf_json(b, text, n) && sbuf_str(b, "}");
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

typedef struct chat {
    llm170_model *model;
    llm170_context *ctx;
    llm170_sampler_params sp;
    const char *template_override; /* NULL: the file's template */
    int n_ctx, n_predict;
    bool verbose;
    bool no_reuse;   /* re-prefill the whole conversation every turn (to check reuse against) */
    sbuf msgs;       /* the messages array's inside, JSON */
    int32_t *cached; /* tokens in the KV cache of sequence 0, in order */
    int n_cached;
    int32_t bos;     /* -1 if the vocabulary adds none */
} chat;

/* Renders the conversation plus the generation prompt and tokenizes it. */
static int render_tokens(chat *c, int32_t **ids, size_t *n) {
    size_t jlen = c->msgs.len + 3;
    char *json = malloc(jlen), *text = NULL;
    size_t tlen = 0;
    if (!json) return -1;
    snprintf(json, jlen, "[%s]", c->msgs.s ? c->msgs.s : "");
    int rc = llm170_chat_render(c->model, json, NULL, true, -1, c->template_override, &text, &tlen);
    free(json);
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

/* One assistant turn: prefill what is new, stream the reply to stdout, append it to the conversation.
 * Returns 0 (done or stopped by Ctrl-C) or -1 on error (message printed). */
static int reply(chat *c) {
    int32_t *ids = NULL;
    size_t n = 0;
    if (render_tokens(c, &ids, &n)) {
        fprintf(stderr, "llm170 run: %s\n", llm170_last_error());
        free(ids);
        return -1;
    }
    if ((int)n + 1 > c->n_ctx) {
        fprintf(stderr, "llm170 run: the conversation (%zu tokens) no longer fits the context of %d tokens; "
                        "/reset starts over, --ctx-size N gives more room\n", n, c->n_ctx);
        free(ids);
        return 1;
    }
    int same = 0;
    while (same < c->n_cached && same < (int)n && c->cached[same] == ids[same]) same++;
    if (same < c->n_cached || same == (int)n || c->no_reuse) {
        /* the rendered history changed (a template that rewrites past turns): start the sequence over */
        llm170_seq_reset(c->ctx, 0);
        c->n_cached = same = 0;
    }
    int reused = same;
    double t0 = now_s();
    int rc = feed(c, ids + same, (int)n - same);
    free(ids);
    if (rc < 0) {
        fprintf(stderr, "llm170 run: %s\n", llm170_last_error());
        return -1;
    }
    double t1 = now_s();
    llm170_sampler *s = NULL;
    llm170_detok *d = NULL;
    sbuf text = {0};
    int n_gen = 0;
    if (llm170_sampler_new(c->model, &c->sp, &s) || llm170_detok_new(c->model, false, &d)) {
        fprintf(stderr, "llm170 run: %s\n", llm170_last_error());
        rc = -1;
        goto out;
    }
    for (int i = 0; i < c->n_cached; i++) llm170_sampler_accept(s, c->cached[i]);
    const char *piece;
    size_t plen;
    while (rc == 0 && !g_interrupted) {
        if (c->n_predict >= 0 && n_gen >= c->n_predict) break;
        if (c->n_cached + 1 >= c->n_ctx) {
            fprintf(stderr, "\n[context full: %d tokens]", c->n_ctx);
            break;
        }
        int32_t tok = llm170_sample(s, llm170_logits(c->ctx, 0));
        llm170_sampler_accept(s, tok);
        /* The end-of-turn token is not decoded: the next turn's rendering brings it, so the prefix stays
         * unchanged. */
        if (llm170_token_is_eog(c->model, tok)) break;
        if (llm170_detok_push(d, tok, &piece, &plen) || !sbuf_add(&text, piece, plen)) {
            rc = -1;
            break;
        }
        fwrite(piece, 1, plen, stdout);
        fflush(stdout);
        n_gen++;
        rc = feed(c, &tok, 1);
    }
    if (rc >= 0 && llm170_detok_flush(d, &piece, &plen) == 0 && sbuf_add(&text, piece, plen))
        fwrite(piece, 1, plen, stdout);
    if (rc < 0) fprintf(stderr, "\nllm170 run: %s\n", llm170_last_error());
    if (g_interrupted) fprintf(stderr, "\n[stopped]");
    printf("\n");
    fflush(stdout);
    if (rc >= 0 && !add_message(&c->msgs, "assistant", text.s ? text.s : "", text.len)) rc = -1;
    if (c->verbose) {
        double t2 = now_s();
        fprintf(stderr, "[prefill %d tokens (%d reused) in %.2f s; %d tokens in %.2f s, %.1f tok/s]\n",
                (int)n - reused, reused, t1 - t0, n_gen, t2 - t1, n_gen / (t2 - t1 > 0 ? t2 - t1 : 1));
    }
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
            "         [--n-predict N] [--template chatml|llama3|gemma|raw|FILE.jinja] [--verbose] [--no-reuse]\n"
            "         [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty X]\n"
            "         [--presence-penalty X] [--frequency-penalty X] [--repeat-last-n N] [--seed N]\n"
            "  in the chat: /exit quits, /reset forgets the conversation, Ctrl-C stops a reply\n");
}

int cmd_run(int argc, char **argv) {
    const char *path = NULL, *prompt = NULL, *system_text = NULL, *tmpl = NULL;
    int rc = 1, n_ctx = 0;
    bool seeded = false;
    llm170_model_params mp = llm170_model_default_params();
    mp.n_threads = args_default_threads();
    chat c = {.n_predict = -1, .bos = -1};
    /* llama.cpp's chat defaults: sampled, so that small models do not loop */
    c.sp = llm170_sampler_default_params();
    c.sp.temperature = 0.8f;
    c.sp.top_k = 40;
    c.sp.top_p = 0.95f;
    c.sp.min_p = 0.05f;
    char *tmpl_text = NULL, *line = NULL;
    size_t line_cap = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        bool ok = true;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        }
        if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
            c.verbose = true;
            continue;
        }
        if (!strcmp(a, "--no-reuse")) {
            c.no_reuse = true;
            continue;
        }
        if (!(v = args_value("run", argc, argv, &i))) goto usage_error;
        if (!strcmp(a, "--model") || !strcmp(a, "-m")) path = v;
        else if (!strcmp(a, "--prompt") || !strcmp(a, "-p")) prompt = v;
        else if (!strcmp(a, "--system") || !strcmp(a, "-sys")) system_text = v;
        else if (!strcmp(a, "--template")) tmpl = v;
        else if (!strcmp(a, "--n-predict") || !strcmp(a, "-n")) ok = args_int("run", a, v, -1, 1 << 24, &c.n_predict);
        else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) ok = args_int("run", a, v, 1, 1024, &mp.n_threads);
        else if (!strcmp(a, "--device")) mp.device = v;
        else if (!strcmp(a, "--ctx-size") || !strcmp(a, "-c")) ok = args_int("run", a, v, 16, 1 << 24, &n_ctx);
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
    if (!path) {
        fprintf(stderr, "llm170 run: --model is required\n");
        goto usage_error;
    }
    if (!seeded) c.sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

    struct sigaction sa = {0};
    sa.sa_handler = on_sigint; /* no SA_RESTART: a Ctrl-C at the prompt must interrupt getline */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    preload(path);
    if (g_interrupted) goto done;
    if (llm170_model_load(path, &mp, &c.model)) {
        fprintf(stderr, "llm170 run: %s\n", llm170_last_error());
        goto done;
    }
    if (tmpl && !strcmp(tmpl, "raw")) {
        /* plain text completion: the turns are concatenated as they are (for base models) */
        c.template_override = "{% for m in messages %}{{ m['content'] }}{% endfor %}";
    } else if (tmpl) {
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
    {
        /* a file with no chat template of its own gets the built-in one of its family */
        char *probe = NULL;
        size_t plen = 0;
        if (!c.template_override &&
            llm170_chat_render(c.model, "[{\"role\": \"user\", \"content\": \"hi\"}]", NULL, true, -1, NULL, &probe, &plen)) {
            const char *arch = llm170_model_arch(c.model);
            c.template_override = !strcmp(arch, "gemma3") ? "gemma" : !strcmp(arch, "llama") ? "llama3" : "chatml";
            fprintf(stderr,
                    "note: %s has no chat template (a base model?); using the built-in '%s' one. "
                    "--template raw continues plain text instead.\n",
                    path, c.template_override);
        }
        free(probe);
    }
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
    llm170_context_params cp = {.n_seq = 1, .n_ctx = c.n_ctx, .n_batch = 512};
    c.cached = malloc((size_t)c.n_ctx * sizeof *c.cached);
    if (!c.cached || llm170_context_new(c.model, &cp, &c.ctx)) {
        fprintf(stderr, "llm170 run: %s\n", c.cached ? llm170_last_error() : "out of memory");
        goto done;
    }
    if (system_text && !add_message(&c.msgs, "system", system_text, strlen(system_text))) goto done;

    if (prompt) {
        if (!add_message(&c.msgs, "user", prompt, strlen(prompt))) goto done;
        rc = reply(&c) ? 1 : 0;
        goto done;
    }
    char desc[128];
    llm170_model_desc(c.model, desc, sizeof desc);
    fprintf(stderr, "llm170 run: %s, context %d tokens. /exit quits, /reset starts over, Ctrl-C stops a reply.\n",
            desc, c.n_ctx);
    bool last_was_interrupt = false;
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
        if (!strcmp(line, "/exit") || !strcmp(line, "/quit")) break;
        if (!strcmp(line, "/reset")) {
            c.msgs.len = 0;
            if (c.msgs.s) c.msgs.s[0] = 0;
            if (system_text && !add_message(&c.msgs, "system", system_text, strlen(system_text))) goto done;
            fprintf(stderr, "[conversation cleared]\n");
            continue;
        }
        if (!line[0]) continue;
        size_t keep = c.msgs.len;
        if (!add_message(&c.msgs, "user", line, strlen(line))) goto done;
        int rr = reply(&c);
        if (rr < 0) goto done;
        if (rr > 0) {
            c.msgs.len = keep; /* the turn did not fit: forget it */
            c.msgs.s[keep] = 0;
        }
    }
    rc = 0;
    goto done;
usage_error:
    usage();
    rc = 2;
done:
    free(line);
    free(tmpl_text);
    free(c.msgs.s);
    free(c.cached);
    llm170_context_free(c.ctx);
    llm170_model_free(c.model);
    return rc;
}
