/* test_chat_templates: our renderings are byte-identical to transformers' (jinja2) for the chat templates
 * of popular model families on conversations with system prompts, several turns, tool calls, thinking and
 * content parts (tests/chat/fixtures, made by scripts/gen_chat_fixtures.py; strftime_now pinned to
 * 2026-01-01 UTC on both sides). Where jinja2 raised (the template refuses that conversation), we must
 * fail too, with an error of the class jinja2 raised (and raise_exception's own message). Also: Jinja semantics in isolation, the built-in templates, and errors that name the line. */
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "check.h"

#define FIX "tests/chat/fixtures/"

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    b[*n] = 0;
    fclose(f);
    return b;
}

/* The class of one of our render errors, in jinja2's terms: TemplateError (the template called
 * raise_exception), UndefinedError (an undefined value was used: called, indexed, serialized), TypeError
 * (an operation on values of the wrong types), or "other" (syntax, unsupported constructs, caps). */
static const char *error_class(const char *msg) {
    static const char *type_errors[] = {"unsupported operand types", "is not callable", "cannot index a",
                                        "indices must be integers", "cannot iterate over", "cannot compare",
                                        "bad operand", "cannot slice", "cannot unpack", "expected a string, found",
                                        "expected an integer, found", "expected a sequence, found", "needs a string"};
    if (strstr(msg, "raise_exception: ")) return "TemplateError";
    if (strstr(msg, "undefined")) return "UndefinedError";
    for (size_t i = 0; i < sizeof type_errors / sizeof *type_errors; i++)
        if (strstr(msg, type_errors[i])) return "TypeError";
    return "other";
}

/* A case where jinja2 raised (manifest "!CLASS [MESSAGE]"): we must fail with an error of that class, and
 * for raise_exception with the template's own message. True if so. */
static bool error_matches(const char *tname, const char *conv, const char *flags, int rc, const err *e,
                          const char *want_class, const char *want_msg) {
    if (rc == 0) {
        CHECKF(0, "%s %s %s: jinja2 raised %s but we rendered", tname, conv, flags, want_class);
        return false;
    }
    const char *got = error_class(e->msg);
    bool ok = !strcmp(got, want_class);
    if (ok && want_msg[0]) {
        const char *p = strstr(e->msg, "raise_exception: ");
        ok = p && !strcmp(p + strlen("raise_exception: "), want_msg);
    }
    CHECKF(ok, "%s %s %s: jinja2 raised %s%s%s; our error (%s) is: %s", tname, conv, flags, want_class,
           want_msg[0] ? ": " : "", want_msg, got, e->msg);
    return ok;
}

static void run_manifest(void) {
    FILE *m = fopen(FIX "manifest.txt", "r");
    CHECKF(m != NULL, "cannot open " FIX "manifest.txt (run from the repo root)");
    if (!m) return;
    char line[1024], last_tmpl[256] = "";
    int n = 0, same = 0, n_err = 0, tmpl_cases = 0, tmpl_same = 0;
    while (fgets(line, sizeof line, m)) {
        char tname[256], conv[64], tools[16], flags[8], exp[512];
        int used = 0;
        if (sscanf(line, "case %255s %63s %15s %7s %511s%n", tname, conv, tools, flags, exp, &used) != 5) continue;
        char *want_msg = line + used; /* "!TemplateError MESSAGE": the message raise_exception was given */
        want_msg += strspn(want_msg, " ");
        want_msg[strcspn(want_msg, "\n")] = 0;
        if (strcmp(tname, last_tmpl)) {
            if (last_tmpl[0]) printf("  %-45s %d/%d identical\n", last_tmpl, tmpl_same, tmpl_cases);
            snprintf(last_tmpl, sizeof last_tmpl, "%s", tname);
            tmpl_cases = tmpl_same = 0;
        }
        char path[1024];
        size_t tn = 0, mn = 0, tln = 0, en = 0;
        snprintf(path, sizeof path, FIX "templates/%s.jinja", tname);
        char *tmpl = slurp(path, &tn);
        snprintf(path, sizeof path, FIX "conv/%s.json", conv);
        char *msgs = slurp(path, &mn);
        char *tl = strcmp(tools, "-") ? slurp(FIX "conv/functions.json", &tln) : NULL;
        char *want = NULL;
        if (exp[0] != '!') {
            snprintf(path, sizeof path, FIX "expected/%s", exp);
            want = slurp(path, &en);
        }
        CHECKF(tmpl && msgs, "missing fixture files for %s", tname);
        chat_opts o = {.add_generation_prompt = strchr(flags, 'g') != NULL,
                       .enable_thinking = strchr(flags, 'T') ? 1 : strchr(flags, 't') ? 0 : -1,
                       .bos_token = "<s>",
                       .eos_token = "</s>",
                       .now = 1767225600};
        char *out = NULL;
        size_t on = 0;
        err e = {0};
        int rc = tmpl && msgs ? chat_render(tmpl, tn, msgs, mn, tl, tln, &o, &out, &on, &e) : -1;
        bool ok;
        if (want) {
            ok = rc == 0 && on == en && !memcmp(out, want, en);
            if (!ok) {
                size_t d = 0;
                while (rc == 0 && d < on && d < en && out[d] == want[d]) d++;
                CHECKF(ok, "%s %s %s: %s; first difference at byte %zu:\n  ours: %.80s\n  jinja2: %.80s", tname, conv,
                       flags, rc ? e.msg : "rendered", d, rc ? "" : out + d, want + d);
            }
        } else {
            ok = error_matches(tname, conv, flags, rc, &e, exp + 1, want_msg);
            n_err += ok;
        }
        n++, same += ok, tmpl_cases++, tmpl_same += ok;
        free(out);
        free(tmpl);
        free(msgs);
        free(tl);
        free(want);
    }
    if (last_tmpl[0]) printf("  %-45s %d/%d identical\n", last_tmpl, tmpl_same, tmpl_cases);
    fclose(m);
    printf("%d template cases: %d identical to jinja2, %d of them errors of the class jinja2 raised\n", n, same, n_err);
    CHECKF(n >= 300, "expected the committed fixtures, found %d cases", n);
}

static void expect_render(const char *tmpl, const char *msgs, const char *want) {
    chat_opts o = {.enable_thinking = -1, .bos_token = "<s>"};
    char *out = NULL;
    size_t on;
    err e = {0};
    int rc = chat_render(tmpl, strlen(tmpl), msgs, strlen(msgs), NULL, 0, &o, &out, &on, &e);
    CHECKF(rc == 0 && !strcmp(out, want), "template %s\n  gave: %s\n  want: %s", tmpl, rc ? e.msg : out, want);
    free(out);
}

static void expect_error(const char *tmpl, const char *msgs, const char *needle) {
    chat_opts o = {.enable_thinking = -1};
    char *out = NULL;
    size_t on;
    err e = {0};
    int rc = chat_render(tmpl, strlen(tmpl), msgs, strlen(msgs), NULL, 0, &o, &out, &on, &e);
    CHECKF(rc != 0 && strstr(e.msg, needle), "template %s: expected an error with '%s', got rc %d '%s'", tmpl, needle,
           rc, rc ? e.msg : out);
    free(out);
}

static void unit(void) {
    const char *m = "[{\"role\":\"user\",\"content\":\"hi\"}]";
    /* Python semantics (values jinja2 computes and prints) */
    expect_render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 1 / 4 }} {{ 2 ** 10 }} {{ 1e16 }} {{ 0.1 + 0.2 }}", m,
                  "3 -4 -2 0.25 1024 1e+16 0.30000000000000004");
    expect_render("{{ [1, 'a', none, true] }} {{ {'k': 1.0} }} {{ 'it''s' }}", m, "[1, 'a', None, True] {'k': 1.0} its");
    expect_render("{{ 'héllo'[1] }}{{ 'abc'[::-1] }}{{ 'héllo'|length }}{{ [1,2,3][-1] }}{{ [1,2,3,4][1:3] }}", m,
                  "écba53[2, 3]");
    expect_render("{{ ' a b '.split() }}{{ 'a,b,,c'.split(',') }}{{ '  x\\n'.strip() }}|{{ 'xxaxx'.strip('x') }}", m,
                  "['a', 'b']['a', 'b', '', 'c']x|a");
    expect_render("{{ {'b': 1, 'a': [true, none]}|tojson }} {{ 'é\"'|tojson }} {{ {'a': 1}|tojson(indent=2) }}", m,
                  "{\"b\": 1, \"a\": [true, null]} \"é\\\"\" {\n  \"a\": 1\n}");
    /* scoping: set in a loop does not leak; namespace does */
    expect_render("{% set x = 1 %}{% set ns = namespace(y=1) %}{% for i in range(3) %}{% set x = x + i %}"
                  "{% set ns.y = ns.y + i %}{% endfor %}{{ x }} {{ ns.y }}",
                  m, "1 4");
    expect_render("{% for m in messages %}{{ loop.index }}/{{ loop.length }}{{ m.role }}{% if loop.last %}!{% endif %}"
                  "{% endfor %}",
                  m, "1/1user!");
    expect_render("{% macro f(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ f(1) }}{{ f(2, b=3) }}", m, "[1B][23]");
    /* whitespace control: trim_blocks and lstrip_blocks as transformers sets them */
    expect_render("a\n  {% if true %}\n  b\n  {% endif %}\nc{{- ' d ' -}}  e", m, "a\n  b\nc d e");
    expect_render("{{ undefined_thing }}|{{ undefined_thing is defined }}|{{ messages[5] is defined }}", m,
                  "|False|False");
    expect_render("{{ bos_token }}{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }}",
                  m, "<s>hi");
    /* errors: named, with the line */
    expect_error("line1\n{{ raise_exception('no system role') }}", m, "line 2");
    expect_error("{% include 'x' %}", m, "unsupported construct");
    expect_error("{{ x.y }}", m, "undefined");
    expect_error("{% if true %}never closed", m, "endif");
    expect_error("{{ 1 + }}", m, "line 1");
    expect_error("{{ 'x'|no_such_filter }}", m, "no_such_filter");
    expect_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", m, "nested deeper");
    expect_error("{% for i in range(10000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}", m, "cap");
    expect_error("{{ x }}", "[{\"role\": ", "invalid JSON");
    /* built-ins */
    const char *conv = "[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"Yo\"}]";
    chat_opts o = {.add_generation_prompt = true, .enable_thinking = -1, .bos_token = "<bos>"};
    char *out = NULL;
    size_t on;
    err e = {0};
    const char *t = chat_builtin_template("chatml");
    CHECK(t && chat_render(t, strlen(t), conv, strlen(conv), NULL, 0, &o, &out, &on, &e) == 0 &&
          !strcmp(out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nYo<|im_end|>\n<|im_start|>assistant\n"));
    free(out);
    t = chat_builtin_template("gemma");
    CHECK(t && chat_render(t, strlen(t), conv, strlen(conv), NULL, 0, &o, &out, &on, &e) == 0 &&
          !strcmp(out, "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nYo<end_of_turn>\n"
                       "<start_of_turn>model\n"));
    free(out);
    CHECK(chat_builtin_template("llama3") && !chat_builtin_template("nope"));
}

int main(void) {
    unit();
    run_manifest();
    return check_report("test_chat_templates");
}
