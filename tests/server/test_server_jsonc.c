/* Constrained JSON (src/server/jsonc*.c): the schema compiler's refusals; the automaton on documents
 * that must pass and must fail; and the mask under random "logits": a walk that draws tokens uniformly
 * from a small byte-level vocabulary (rejection sampling, then the mask) within a random token budget
 * must always end with JSON that parses and validates against its schema (checked by a validator here,
 * independent of the automaton). Many seeds per schema, so a mask that lets one wrong token through, or a
 * completion that does not fit the budget, shows. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "server/jsonc.h"

static srv_jc_schema *compile(const char *schema, srv_err *e) {
    json_t *j = json_loads(schema, 0, NULL);
    srv_jc_schema *s = NULL;
    int rc = srv_jc_compile(j, &s, e);
    json_decref(j);
    return rc ? NULL : s;
}

static void check_refusals(void) {
    const char *bad[][2] = {
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"anyOf\":[{\"type\":\"string\"}]}}}", "anyOf"},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"pattern\":\"x\"}}}", "pattern"},
        {"{\"type\":[\"object\",\"null\"]}", "type lists"},
        {"{\"type\":\"string\"}", "root must be an object"},
        {"{\"type\":\"object\",\"required\":[\"b\"],\"properties\":{\"a\":{}}}", "not in properties"},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/x\"}}}", "$ref"},
        {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}", "additionalProperties"},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"enum\":[{\"x\":1}]}}}", "enum values"},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"date\"}}}", "not a JSON schema type"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        srv_err e = {0};
        srv_jc_schema *s = compile(bad[i][0], &e);
        CHECKF(!s && e.status == 400 && strstr(e.msg, bad[i][1]), "%s: %s", bad[i][0], e.msg);
        srv_jc_schema_free(s);
    }
}

static bool accepts(const srv_jc_schema *s, const char *doc) {
    srv_jc_state st;
    srv_jc_init(&st, s);
    return srv_jc_feed(&st, doc, strlen(doc)) && srv_jc_done(&st);
}

static const char *SCHEMAS[] = {
    NULL, /* json_object: any object */
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},\"required\":[\"name\",\"age\"],"
    "\"additionalProperties\":false}",
    "{\"type\":\"object\",\"properties\":{\"unit\":{\"enum\":[\"celsius\",\"fahrenheit\",1,12,null]},"
    "\"ok\":{\"type\":\"boolean\"},\"none\":{\"type\":\"null\"},\"x\":{\"type\":\"number\"}},\"required\":[\"unit\",\"x\"]}",
    "{\"type\":\"object\",\"properties\":{\"steps\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
    "{\"explanation\":{\"type\":\"string\"},\"output\":{\"type\":\"string\"}},\"required\":[\"explanation\",\"output\"],"
    "\"additionalProperties\":false}},\"final_answer\":{\"type\":\"string\"}},\"required\":[\"steps\",\"final_answer\"],"
    "\"additionalProperties\":false}",
    "{\"type\":\"object\",\"properties\":{\"meta\":{\"type\":\"object\"},\"any\":{},\"const\":{\"const\":\"v1\"}},"
    "\"required\":[\"const\",\"meta\",\"any\"]}",
    "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
};

static void check_automaton(void) {
    srv_err e;
    srv_jc_schema *any = compile("{\"type\":\"object\"}", &e), *person = compile(SCHEMAS[1], &e),
                  *en = compile(SCHEMAS[2], &e);
    CHECK(any && person && en);
    CHECK(accepts(any, "{}") && accepts(any, " { \"a\" : [1, -2.5e+3, true, null, {\"b\": \"\\u00e9\\n\"}] } "));
    CHECK(accepts(any, "{\"k\": \"caf\xc3\xa9\"}"));
    CHECK(!accepts(any, "[]") && !accepts(any, "{\"a\":}") && !accepts(any, "{\"a\":01}") && !accepts(any, "{,}"));
    CHECK(!accepts(any, "{\"a\":1,}") && !accepts(any, "{\"a\":\"x\x01\"}") && !accepts(any, "{\"a\":\"\xff\"}"));
    CHECK(!accepts(any, "{\"a\":tru}") && !accepts(any, "{\"a\":1.}") && !accepts(any, "{\"a\":\"\\x\"}"));
    CHECK(accepts(person, "{\"name\": \"Ann\", \"age\": 31}") && accepts(person, "{\"name\":\"A\",\"age\":-1,\"tags\":[]}"));
    CHECK(!accepts(person, "{\"age\": 31, \"name\": \"Ann\"}")); /* schema order */
    CHECK(!accepts(person, "{\"name\": \"Ann\"}") && !accepts(person, "{\"name\": \"Ann\", \"age\": 3.5}"));
    CHECK(!accepts(person, "{\"name\": \"Ann\", \"age\": 3, \"extra\": 1}") && !accepts(person, "{\"name\": 5, \"age\": 3}"));
    CHECK(accepts(en, "{\"unit\": 12, \"x\": 0.5}") && accepts(en, "{\"unit\": 1, \"x\": 0}"));
    CHECK(accepts(en, "{\"unit\": \"celsius\", \"ok\": false, \"none\": null, \"x\": 1e5}"));
    CHECK(!accepts(en, "{\"unit\": \"kelvin\", \"x\": 1}") && !accepts(en, "{\"unit\": 123, \"x\": 1}"));
    CHECK(!accepts(en, "{\"unit\": null, \"ok\": 1, \"x\": 1}"));
    /* whitespace is bounded: a model cannot pad forever */
    char pad[64] = "{";
    memset(pad + 1, ' ', 30);
    CHECK(!accepts(any, strcat(pad, "}")));
    srv_jc_schema_free(any), srv_jc_schema_free(person), srv_jc_schema_free(en);
}

/* ---- an independent validator for the subset ---- */
static bool valid(const json_t *sch, const json_t *v) {
    if (!sch || json_object_size(sch) == 0) return true;
    const json_t *en = json_object_get(sch, "enum"), *cn = json_object_get(sch, "const");
    if (cn) return json_equal(cn, v);
    if (en) {
        for (size_t i = 0; i < json_array_size(en); i++)
            if (json_equal(json_array_get(en, i), v)) return true;
        return false;
    }
    const char *t = json_string_value(json_object_get(sch, "type"));
    if (!t) return true;
    if (!strcmp(t, "string")) return json_is_string(v);
    if (!strcmp(t, "integer")) return json_is_integer(v);
    if (!strcmp(t, "number")) return json_is_number(v);
    if (!strcmp(t, "boolean")) return json_is_boolean(v);
    if (!strcmp(t, "null")) return json_is_null(v);
    if (!strcmp(t, "array")) {
        if (!json_is_array(v)) return false;
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!valid(json_object_get(sch, "items"), json_array_get(v, i))) return false;
        return true;
    }
    if (!json_is_object(v)) return false;
    const json_t *props = json_object_get(sch, "properties"), *req = json_object_get(sch, "required");
    for (size_t i = 0; i < json_array_size(req); i++)
        if (!json_object_get(v, json_string_value(json_array_get(req, i)))) return false;
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        const json_t *ps = json_object_get(props, k);
        if (!ps && json_is_false(json_object_get(sch, "additionalProperties"))) return false;
        if (ps && !valid(ps, x)) return false;
    }
    return true;
}

static uint64_t rng;
static uint32_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* A byte-level toy vocabulary: every printable byte, whitespace, multi-byte pieces, a lone UTF-8 lead
 * and continuation (must pair up), and some JSON-looking chunks. */
static const char *VOCAB[200];
static int n_vocab;

static void make_vocab(void) {
    static char singles[100][2];
    for (int c = 0x20; c < 0x7f; c++) singles[c - 0x20][0] = (char)c, VOCAB[n_vocab++] = singles[c - 0x20];
    const char *more[] = {"\n", "\t", "  ", "\n  ", "\xc3", "\xa9", "\xc3\xa9", "\xff", "\"name\"", "\": \"", "\":",
                          "true", "false", "null", "123", "-0.5", "e+", "{\"", "\"}", "}}", "]}", "[{", "\",\"", "abc",
                          "\\u00", "\\n", "celsius", "\"unit\": ", "\"steps\": [", "\"explanation\"", "\"x\":1"};
    for (size_t i = 0; i < sizeof more / sizeof *more; i++) VOCAB[n_vocab++] = more[i];
}

static void check_random_walks(void) {
    make_vocab();
    srv_jc_vocab *v = srv_jc_vocab_from_texts(VOCAB, n_vocab);
    uint8_t *allowed = malloc((size_t)n_vocab);
    int walks = 0, parsed = 0, masked_steps = 0;
    for (size_t si = 0; si < sizeof SCHEMAS / sizeof *SCHEMAS; si++) {
        srv_err e;
        json_t *sj = SCHEMAS[si] ? json_loads(SCHEMAS[si], 0, NULL) : NULL;
        srv_jc_schema *s = NULL;
        CHECKF(srv_jc_compile(sj, &s, &e) == 0, "schema %zu: %s", si, e.msg);
        for (int seed = 1; s && seed <= 150; seed++) {
            rng = 0x9E3779B97F4A7C15ull * (uint64_t)(seed + 1000 * (int)si);
            srv_jc_state st;
            srv_jc_init(&st, s);
            char comp[1024], out[4096];
            int budget = (int)srv_jc_completion(&st, comp, sizeof comp) + 2 + (int)(rnd() % 120), n = 0;
            size_t len = 0;
            while (!srv_jc_done(&st) && budget > 0) {
                int32_t tok = (int32_t)(rnd() % (uint32_t)n_vocab);
                if (!srv_jc_token_ok(&st, v, budget, tok)) {
                    masked_steps++;
                    int k = srv_jc_mask(&st, v, budget, allowed);
                    CHECKF(k > 0, "schema %zu seed %d: nothing allowed after '%.*s'", si, seed, (int)len, out);
                    if (k == 0) break;
                    int pick = (int)(rnd() % (uint32_t)k);
                    for (tok = 0; tok < n_vocab; tok++)
                        if (allowed[tok] && pick-- == 0) break;
                    CHECK(srv_jc_token_ok(&st, v, budget, tok));
                }
                CHECK(srv_jc_feed(&st, VOCAB[tok], strlen(VOCAB[tok])));
                size_t tl = strlen(VOCAB[tok]);
                if (len + tl < sizeof out) memcpy(out + len, VOCAB[tok], tl), len += tl;
                budget--, n++;
            }
            out[len] = 0;
            walks++;
            CHECKF(srv_jc_done(&st), "schema %zu seed %d: not closed within the budget: '%s'", si, seed, out);
            json_error_t je;
            json_t *doc = json_loads(out, 0, &je);
            CHECKF(doc && valid(sj, doc), "schema %zu seed %d: '%s' (%s)", si, seed, out, doc ? "invalid" : je.text);
            parsed += doc && valid(sj, doc);
            json_decref(doc);
        }
        srv_jc_schema_free(s);
        json_decref(sj);
    }
    printf("random walks: %d of %d valid documents (%d masked steps)\n", parsed, walks, masked_steps);
    free(allowed);
    srv_jc_vocab_free(v);
}

int main(void) {
    check_refusals();
    check_automaton();
    check_random_walks();
    return check_report("test_server_jsonc");
}
