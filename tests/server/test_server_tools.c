/* Tool calls in canned model replies (src/server/toolcall.c): Qwen2.5/Hermes tags, Llama 3.x bare JSON,
 * fenced JSON, text around and between calls, malformed calls left as text; and the stream form, fed the
 * same replies in pieces of every size, must find the same calls and the same text as the whole parse. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "server/toolcall.h"

static char *names_arr[] = {"get_weather", "add"};
static const srv_tool_names NAMES = {names_arr, 2};

typedef struct want {
    const char *reply;
    int n;              /* calls expected */
    const char *name0, *args0, *name1, *content;
} want;

static const want cases[] = {
    {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", 1, "get_weather",
     "{\"city\":\"Paris\"}", NULL, ""},
    {"Let me check.\n\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>\n<tool_call>\n"
     "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>",
     2, "add", "{\"a\":1,\"b\":2}", "get_weather", "Let me check."},
    /* the turn ended right after the JSON: no closing tag */
    {"<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 5}}", 1, "add", "{\"a\":5}", NULL, ""},
    /* Llama 3.x: the whole reply is the call, "parameters" for the arguments, maybe after <|python_tag|> */
    {"{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}", 1, "get_weather", "{\"city\":\"Oslo\"}", NULL, ""},
    {"<|python_tag|>{\"name\": \"add\", \"parameters\": {}}", 1, "add", "{}", NULL, ""},
    {"[{\"name\": \"add\", \"arguments\": {\"a\": 1}}, {\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"X\\\"}\"}]",
     2, "add", "{\"a\":1}", "get_weather", ""},
    /* small models fence their calls */
    {"```json\n{\n  \"name\": \"get_weather\",\n  \"arguments\": {\n    \"city\": \"Paris\"\n  }\n}\n```", 1, "get_weather",
     "{\"city\":\"Paris\"}", NULL, ""},
    {"```xml\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2}}\n</tool_call>\n```", 1, "add", "{\"a\":2}", NULL, ""},
    /* "\u0000" in an argument is valid JSON */
    {"<tool_call>\n{\"name\": \"add\", \"arguments\": {\"s\": \"a\\u0000b\"}}\n</tool_call>", 1, "add",
     "{\"s\":\"a\\u0000b\"}", NULL, ""},
    /* the closing tag inside an argument's string is text of the argument, not the call's end
       (test_schemas.py's forced call on the random model wrote one) */
    {"<tool_call>\n{\"name\": \"add\", \"arguments\": {\"s\": \"x</tool_call>y\"}}\n</tool_call>", 1, "add",
     "{\"s\":\"x</tool_call>y\"}", NULL, ""},
    /* both: the tag inside a string and no closing tag after the JSON (the ASan pass of CI met it: the
       forced call was returned as text) */
    {"<tool_call>\n{\"name\": \"add\", \"arguments\": {\"s\": \"x</tool_call>y\", \"a\": 8}}", 1, "add",
     "{\"s\":\"x</tool_call>y\",\"a\":8}", NULL, ""},
    /* not calls: plain text stays text */
    {"The weather is nice.", 0, NULL, NULL, NULL, "The weather is nice."},
    {"{\"name\": \"rm_rf\", \"arguments\": {}}", 0, NULL, NULL, NULL, "{\"name\": \"rm_rf\", \"arguments\": {}}"},
    {"{\"answer\": 42}", 0, NULL, NULL, NULL, "{\"answer\": 42}"},
    {"<tool_call>\nnot json\n</tool_call>", 0, NULL, NULL, NULL, "<tool_call>\nnot json\n</tool_call>"},
    {"```python\nprint(1)\n```", 0, NULL, NULL, NULL, "```python\nprint(1)\n```"},
    {"Use <tool_ca", 0, NULL, NULL, NULL, "Use <tool_ca"},
    {"<b>bold</b>", 0, NULL, NULL, NULL, "<b>bold</b>"},
    {"", 0, NULL, NULL, NULL, ""},
};

typedef struct got {
    char text[512];
    size_t tl;
    srv_tool_call calls[4];
    int n;
} got;

static void on_text(void *ctx, const char *t, size_t n) {
    got *g = ctx;
    if (g->tl + n < sizeof g->text) memcpy(g->text + g->tl, t, n), g->tl += n;
    g->text[g->tl] = 0;
}

static void on_call(void *ctx, srv_tool_call *c) {
    got *g = ctx;
    if (g->n < 4) g->calls[g->n++] = *c;
    else srv_tool_call_free(c);
}

/* Leading/trailing blank lines aside (the stream sends the newline before a call as text). */
static int same_text(const char *a, const char *b) {
    while (*a == '\n') a++;
    while (*b == '\n') b++;
    size_t la = strlen(a), lb = strlen(b);
    while (la && (a[la - 1] == '\n' || a[la - 1] == ' ')) la--;
    while (lb && (b[lb - 1] == '\n' || b[lb - 1] == ' ')) lb--;
    return la == lb && !memcmp(a, b, la);
}

static void check_case(const want *w, size_t ci) {
    char *content;
    srv_tool_call *calls;
    int n;
    CHECK(srv_tools_parse(w->reply, strlen(w->reply), &NAMES, &content, &calls, &n) == 0);
    CHECKF(n == w->n, "case %zu: %d calls, expected %d", ci, n, w->n);
    if (n == w->n && n > 0) {
        CHECKF(!strcmp(calls[0].name, w->name0) && !strcmp(calls[0].arguments, w->args0), "case %zu: %s %s", ci,
               calls[0].name, calls[0].arguments);
        if (n > 1) CHECKF(!strcmp(calls[1].name, w->name1), "case %zu: second %s", ci, calls[1].name);
    }
    CHECKF(same_text(content, w->content), "case %zu: content '%s', expected '%s'", ci, content, w->content);
    /* the stream form, fed in pieces of each size from 1 byte to the whole */
    size_t len = strlen(w->reply);
    for (size_t piece = 1; piece <= (len ? len : 1); piece++) {
        srv_tool_stream ts;
        got g = {0};
        srv_tool_stream_init(&ts, &NAMES);
        for (size_t off = 0; off < len; off += piece)
            srv_tool_stream_push(&ts, w->reply + off, off + piece < len ? piece : len - off, false, on_text, on_call, &g);
        srv_tool_stream_push(&ts, "", 0, true, on_text, on_call, &g);
        srv_tool_stream_free(&ts);
        CHECKF(g.n == n, "case %zu piece %zu: stream found %d calls, whole %d", ci, piece, g.n, n);
        for (int i = 0; i < g.n && i < n; i++)
            CHECKF(!strcmp(g.calls[i].name, calls[i].name) && !strcmp(g.calls[i].arguments, calls[i].arguments),
                   "case %zu piece %zu: call %d", ci, piece, i);
        CHECKF(same_text(g.text, content), "case %zu piece %zu: stream text '%s' vs '%s'", ci, piece, g.text, content);
        for (int i = 0; i < g.n; i++) srv_tool_call_free(&g.calls[i]);
    }
    for (int i = 0; i < n; i++) srv_tool_call_free(&calls[i]);
    free(calls);
    free(content);
}

int main(void) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_case(&cases[i], i);
    /* names from a tools array */
    srv_tool_names nm;
    CHECK(srv_tool_names_from_json("[{\"type\":\"function\",\"function\":{\"name\":\"a\"}},{\"type\":\"function\","
                                   "\"function\":{\"name\":\"b\"}}]", &nm) == 0 && nm.n == 2 && !strcmp(nm.names[1], "b"));
    srv_tool_names_free(&nm);
    CHECK(srv_tool_names_from_json("{}", &nm) == -1);
    return check_report("test_server_tools");
}
