/* srv toolcall: see toolcall.h. */
#include "server/toolcall.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char OPEN[] = "<tool_call>", CLOSE[] = "</tool_call>", PYTAG[] = "<|python_tag|>";

enum { S_START, S_TEXT, S_CALL, S_BARE };

void srv_tool_call_free(srv_tool_call *c) {
    if (!c) return;
    free(c->name);
    free(c->arguments);
    c->name = c->arguments = NULL;
}

static bool blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\n' && s[i] != '\r' && s[i] != '\t') return false;
    return true;
}

static const char *find(const char *s, size_t n, const char *pat) {
    size_t m = strlen(pat);
    for (size_t i = 0; i + m <= n; i++)
        if (s[i] == pat[0] && !memcmp(s + i, pat, m)) return s + i;
    return NULL;
}

static bool name_ok(const srv_tool_names *names, const char *name) {
    if (!names) return true;
    for (int i = 0; i < names->n; i++)
        if (!strcmp(names->names[i], name)) return true;
    return false;
}

/* One call object {"name", "arguments" | "parameters"} into c. */
static int call_from_json(const json_t *o, const srv_tool_names *names, srv_tool_call *c) {
    memset(c, 0, sizeof *c);
    const json_t *name = json_object_get(o, "name"), *args = json_object_get(o, "arguments");
    if (!args) args = json_object_get(o, "parameters");
    if (!json_is_string(name) || !name_ok(names, json_string_value(name))) return -1;
    char *text = NULL;
    if (!args || json_is_null(args)) text = strdup("{}");
    else if (json_is_object(args)) text = json_dumps(args, JSON_COMPACT);
    else if (json_is_string(args)) {
        /* some models write the arguments as a JSON string holding the object */
        json_t *inner = json_loads(json_string_value(args), JSON_ALLOW_NUL, NULL);
        if (json_is_object(inner)) text = json_dumps(inner, JSON_COMPACT);
        json_decref(inner);
    }
    if (!text) return -1;
    c->name = strdup(json_string_value(name));
    c->arguments = text;
    return c->name ? 0 : -1;
}

/* Text that is one call object, or (bare) an array of them. Appends to *calls. "\u0000" is valid JSON (and
 * the constrained decoder may write it), so jansson is told to allow it. */
static int calls_from_text(const char *s, size_t n, const srv_tool_names *names, bool allow_array, srv_tool_call **calls,
                           int *n_calls) {
    json_t *v = json_loadb(s, n, JSON_ALLOW_NUL, NULL);
    if (!v) return -1;
    size_t k = json_is_array(v) && allow_array ? json_array_size(v) : 1;
    int rc = json_is_object(v) || (allow_array && json_is_array(v) && k > 0) ? 0 : -1;
    srv_tool_call *out = rc ? NULL : realloc(*calls, sizeof **calls * (size_t)(*n_calls + (int)k));
    if (!out) rc = -1;
    else *calls = out;
    for (size_t i = 0; !rc && i < k; i++) {
        const json_t *o = json_is_array(v) ? json_array_get(v, i) : v;
        if (!json_is_object(o) || call_from_json(o, names, &out[*n_calls + (int)i])) {
            for (size_t j = 0; j < i; j++) srv_tool_call_free(&out[*n_calls + (int)j]);
            rc = -1;
        }
    }
    if (!rc) *n_calls += (int)k;
    json_decref(v);
    return rc;
}

/* The closing tag that ends a call whose JSON begins at body: the first "</tool_call>" before which the
 * text is one whole JSON object (a model may write the tag inside the call's strings too: a random model
 * under constrained decoding did). NULL if none is. */
static const char *call_close(const char *body, const char *end) {
    for (const char *cl = find(body, (size_t)(end - body), CLOSE); cl; cl = find(cl + 1, (size_t)(end - cl - 1), CLOSE)) {
        json_t *v = json_loadb(body, (size_t)(cl - body), JSON_ALLOW_NUL, NULL);
        bool whole = json_is_object(v);
        json_decref(v);
        if (whole) return cl;
    }
    return NULL;
}

/* The whole reply as a bare JSON call (or array), <|python_tag|> allowed first. */
static int bare_calls(const char *s, size_t n, const srv_tool_names *names, srv_tool_call **calls, int *n_calls) {
    while (n && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t')) s++, n--;
    if (n >= sizeof PYTAG - 1 && !memcmp(s, PYTAG, sizeof PYTAG - 1)) s += sizeof PYTAG - 1, n -= sizeof PYTAG - 1;
    return calls_from_text(s, n, names, true, calls, n_calls);
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* A reply that is one Markdown code block (```json ... ```, as small models often wrap their calls):
 * its inside, else the reply itself. */
static void unfence(const char **s, size_t *n) {
    const char *p = *s, *end = *s + *n;
    while (p < end && blank(p, 1)) p++;
    while (end > p && blank(end - 1, 1)) end--;
    if (end - p < 6 || memcmp(p, "```", 3) || memcmp(end - 3, "```", 3)) return;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl || nl > end - 3 || find(nl, (size_t)(end - 3 - nl), "```")) return;
    *s = nl + 1;
    *n = (size_t)(end - 3 - (nl + 1));
}

int srv_tools_parse(const char *text, size_t len, const srv_tool_names *names, char **content, srv_tool_call **calls,
                    int *n_calls) {
    *calls = NULL;
    *n_calls = 0;
    *content = NULL;
    const char *in = text;
    size_t in_n = len;
    unfence(&in, &in_n);
    if (bare_calls(in, in_n, names, calls, n_calls) == 0) return (*content = strdup("")) ? 0 : -1;
    if (in != text && find(in, in_n, OPEN)) text = in, len = in_n;
    /* Hermes tags: text before the first call is the content; text between calls is dropped if blank */
    size_t clen = 0;
    char *c = malloc(len + 1);
    if (!c) return -1;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *o = find(p, (size_t)(end - p), OPEN);
        if (!o) break;
        /* without a closing tag after a whole object, the call runs to the end of the reply (the turn ended
         * right after the JSON; a closing tag inside its strings is not its end) */
        const char *body = o + sizeof OPEN - 1, *cl = call_close(body, end);
        const char *bend = cl ? cl : end;
        if (calls_from_text(body, (size_t)(bend - body), names, false, calls, n_calls)) break;
        if (!(*n_calls > 1 && blank(p, (size_t)(o - p)))) memcpy(c + clen, p, (size_t)(o - p)), clen += (size_t)(o - p);
        p = cl ? cl + sizeof CLOSE - 1 : end;
    }
    if (*n_calls && blank(p, (size_t)(end - p))) p = end;
    memcpy(c + clen, p, (size_t)(end - p));
    clen += (size_t)(end - p);
    /* the blank lines between the content and the first call */
    while (*n_calls && clen && (c[clen - 1] == '\n' || c[clen - 1] == ' ')) clen--;
    c[clen] = 0;
    *content = c;
    return 0;
}

/* ---- stream ---- */

void srv_tool_stream_init(srv_tool_stream *ts, const srv_tool_names *names) {
    memset(ts, 0, sizeof *ts);
    ts->names = names;
}

void srv_tool_stream_free(srv_tool_stream *ts) {
    free(ts->buf);
    memset(ts, 0, sizeof *ts);
}

static void consume(srv_tool_stream *ts, size_t n) {
    memmove(ts->buf, ts->buf + n, ts->len - n);
    ts->len -= n;
}

/* Bytes at the end of s[0..n) that are a proper prefix of pat (held back: the tag may be arriving). */
static size_t tail_prefix(const char *s, size_t n, const char *pat) {
    size_t m = strlen(pat);
    for (size_t k = m - 1 < n ? m - 1 : n; k > 0; k--)
        if (!memcmp(s + n - k, pat, k)) return k;
    return 0;
}

static void emit_text(srv_tool_stream *ts, size_t n, srv_tool_text_fn on_text, void *ctx) {
    /* after a call, blank text (the newline between calls) is not content */
    if (n && on_text && !(ts->n_calls && blank(ts->buf, n))) {
        on_text(ctx, ts->buf, n);
        ts->any_text |= !blank(ts->buf, n);
    }
    consume(ts, n);
}

void srv_tool_stream_push(srv_tool_stream *ts, const char *text, size_t len, bool final, srv_tool_text_fn on_text,
                          srv_tool_call_fn on_call, void *ctx) {
    if (ts->len + len + 1 > ts->cap) {
        size_t cap = (ts->len + len + 1) * 2;
        char *b = realloc(ts->buf, cap);
        if (!b) return;
        ts->buf = b, ts->cap = cap;
    }
    memcpy(ts->buf + ts->len, text, len);
    ts->len += len;
    for (;;) {
        if (ts->state == S_START) {
            size_t i = 0;
            while (i < ts->len && blank(ts->buf + i, 1)) i++;
            if (i == ts->len && !final) return;
            const char *s = ts->buf + i;
            size_t left = ts->len - i, k = left < sizeof PYTAG - 1 ? left : sizeof PYTAG - 1;
            if (left >= 3 && !memcmp(s, "```", 3)) {
                /* a code block first: held whole if what it opens with may be a call */
                const char *nl = memchr(s, '\n', left);
                size_t j = nl ? (size_t)(nl - ts->buf) + 1 : ts->len;
                while (j < ts->len && blank(ts->buf + j, 1)) j++;
                if (j == ts->len && !final) return;
                s = ts->buf + j;
                left = ts->len - j;
                k = left < sizeof PYTAG - 1 ? left : sizeof PYTAG - 1;
            } else if (left < 3 && *s == '`' && !final) {
                return;
            }
            bool bare = left && (*s == '{' || *s == '[' || !memcmp(s, PYTAG, k) || !memcmp(s, OPEN, left < 11 ? left : 11));
            if (bare && s != ts->buf + i) ts->state = S_BARE; /* fenced: decided at the end */
            else if (bare && *s == '<' && memcmp(s, PYTAG, k)) ts->state = S_TEXT; /* a plain <tool_call> */
            else if (bare && k < sizeof PYTAG - 1 && *s == '<' && !final) return; /* may be either tag yet */
            else ts->state = bare ? S_BARE : S_TEXT;
        }
        if (ts->state == S_BARE) {
            if (!final) return;
            char *content = NULL;
            srv_tool_call *calls = NULL;
            int n = 0;
            if (srv_tools_parse(ts->buf, ts->len, ts->names, &content, &calls, &n) == 0 && n > 0) {
                if (content[0] && on_text) on_text(ctx, content, strlen(content));
                for (int i = 0; i < n; i++) ts->n_calls++, on_call(ctx, &calls[i]);
                free(calls);
                free(content);
                ts->len = 0;
                return;
            }
            free(content);
            free(calls);
            ts->state = S_TEXT; /* not a call after all: it is text */
        }
        if (ts->state == S_TEXT) {
            const char *o = find(ts->buf, ts->len, OPEN);
            if (!o) {
                emit_text(ts, final ? ts->len : ts->len - tail_prefix(ts->buf, ts->len, OPEN), on_text, ctx);
                return;
            }
            emit_text(ts, (size_t)(o - ts->buf), on_text, ctx);
            ts->state = S_CALL;
        }
        /* S_CALL: the buffer starts with <tool_call> */
        const char *body = ts->buf + sizeof OPEN - 1, *cl = call_close(body, ts->buf + ts->len);
        if (!cl && !final) return; /* the call (and its closing tag) may still be arriving */
        const char *bend = cl ? cl : ts->buf + ts->len;
        srv_tool_call *calls = NULL;
        int n = 0;
        if (calls_from_text(body, (size_t)(bend - body), ts->names, false, &calls, &n) == 0) {
            ts->n_calls++;
            on_call(ctx, &calls[0]);
            free(calls);
            consume(ts, cl ? (size_t)(cl - ts->buf) + sizeof CLOSE - 1 : ts->len);
        } else {
            /* not a well-formed call: the tag and what follows are text */
            emit_text(ts, cl ? (size_t)(cl - ts->buf) + sizeof CLOSE - 1 : ts->len, on_text, ctx);
        }
        ts->state = S_TEXT;
        if (ts->len == 0) return;
    }
}

int srv_tool_names_from_json(const char *tools_json, srv_tool_names *out) {
    memset(out, 0, sizeof *out);
    json_t *a = json_loads(tools_json, 0, NULL);
    if (!json_is_array(a)) {
        json_decref(a);
        return -1;
    }
    out->names = calloc(json_array_size(a) + 1, sizeof *out->names);
    for (size_t i = 0; out->names && i < json_array_size(a); i++) {
        const json_t *name = json_object_get(json_object_get(json_array_get(a, i), "function"), "name");
        if (json_is_string(name)) out->names[out->n++] = strdup(json_string_value(name));
    }
    json_decref(a);
    return out->names ? 0 : -1;
}

void srv_tool_names_free(srv_tool_names *n) {
    for (int i = 0; i < n->n; i++) free(n->names[i]);
    free(n->names);
    memset(n, 0, sizeof *n);
}
