/* Constrained JSON (src/server/jsonc*.c): the automaton on documents that must pass and must fail (each
 * schema feature: objects, enums, alternatives, references, bounds, lengths, patterns, UTF-8); and the mask
 * under random "logits": a walk that draws tokens uniformly from a small byte-level vocabulary (rejection
 * sampling, then the mask) within a random token budget must always end with JSON that parses and
 * validates against its schema (checked here by a validator of the old subset, independent of the
 * automaton). Many seeds per schema, so a mask that lets one wrong token through, or a completion that does
 * not fit the budget, shows.
 *
 * `test_server_jsonc --walk CORPUS N` prints, for every schema of the corpus (tests/server/fixtures/
 * schemas.json), N such walks as JSON lines, and each refused schema's error: tests/server/
 * test_jsonc_walks.py validates them with the jsonschema package (every feature, not just the subset). */
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

#define OBJ1(prop) "{\"type\":\"object\",\"properties\":{\"a\":" prop "},\"required\":[\"a\"]}"

static void check_automaton(void) {
    srv_err e;
    srv_jc_schema *any = compile("{\"type\":\"object\"}", &e), *person = compile(SCHEMAS[1], &e),
                  *en = compile(SCHEMAS[2], &e);
    CHECK(any && person && en);
    CHECK(accepts(any, "{}") && accepts(any, " { \"a\" : [1, -2.5e+3, true, null, {\"b\": \"\\u00e9\\n\"}] } "));
    CHECK(accepts(any, "{\"k\": \"caf\xc3\xa9\"}") && accepts(any, "{\"k\": \"\xe0\xa0\x80\xf0\x9f\x98\x80\"}"));
    CHECK(!accepts(any, "[]") && !accepts(any, "{\"a\":}") && !accepts(any, "{\"a\":01}") && !accepts(any, "{,}"));
    CHECK(!accepts(any, "{\"a\":1,}") && !accepts(any, "{\"a\":\"x\x01\"}") && !accepts(any, "{\"a\":\"\xff\"}"));
    CHECK(!accepts(any, "{\"a\":tru}") && !accepts(any, "{\"a\":1.}") && !accepts(any, "{\"a\":\"\\x\"}"));
    /* overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8 */
    CHECK(!accepts(any, "{\"a\":\"\xe0\x80\x80\"}") && !accepts(any, "{\"a\":\"\xed\xa0\x80\"}"));
    CHECK(!accepts(any, "{\"a\":\"\xf0\x80\x80\x80\"}") && !accepts(any, "{\"a\":\"\xf4\x90\x80\x80\"}"));
    /* UTF-16 surrogates in escapes: only a high half followed by a low one */
    CHECK(accepts(any, "{\"a\":\"\\ud83d\\ude00\"}") && accepts(any, "{\"a\":\"\\uD7FF\\uE000\"}"));
    CHECK(!accepts(any, "{\"a\":\"\\ud83d\"}") && !accepts(any, "{\"a\":\"\\ude00\"}"));
    CHECK(!accepts(any, "{\"a\":\"\\ud83d\\u0041\"}") && !accepts(any, "{\"a\":\"\\ud83dx\"}"));
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

/* One schema (an object with property "a" unless it starts with '!': then the text is the schema) and
 * documents it must accept (+) or refuse (-). */
static void check_feature(const char *prop, const char *const *docs) {
    srv_err e = {0};
    srv_jc_schema *s = prop[0] == '!' ? compile(prop + 1, &e) : NULL;
    if (prop[0] != '!') {
        char sch[1024];
        snprintf(sch, sizeof sch, OBJ1("%s"), prop);
        s = compile(sch, &e);
    }
    CHECKF(s, "%s: %s", prop, e.msg);
    for (int i = 0; s && docs[i]; i++) {
        char doc[512];
        const char *d = docs[i] + 1;
        if (prop[0] != '!') snprintf(doc, sizeof doc, "{\"a\":%s}", d), d = doc;
        CHECKF(accepts(s, d) == (docs[i][0] == '+'), "%s: %s", prop, docs[i]);
    }
    srv_jc_schema_free(s);
}

static void check_features(void) {
    check_feature("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}", (const char *[]){"+\"x\"", "+null", "-1", "-[]", NULL});
    check_feature("{\"type\":[\"integer\",\"boolean\"]}", (const char *[]){"+7", "+true", "-7.5", "-\"7\"", NULL});
    check_feature("{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"k\":{\"const\":1},\"x\":{\"type\":\"string\"}},"
                  "\"required\":[\"k\",\"x\"]},{\"type\":\"object\",\"properties\":{\"k\":{\"const\":2},\"y\":{\"type\":"
                  "\"integer\"}},\"required\":[\"k\",\"y\"]}]}",
                  (const char *[]){"+{\"k\":1,\"x\":\"s\"}", "+{\"k\":2,\"y\":3}", "-{\"k\":1,\"y\":3}", "-{\"k\":2,\"x\":\"s\"}", NULL});
    check_feature("!{\"type\":\"object\",\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"next\":{\"anyOf\":[{\"$ref\":"
                  "\"#/$defs/n\"},{\"type\":\"null\"}]}},\"required\":[\"next\"]}},\"properties\":{\"l\":{\"$ref\":\"#/$defs/n\"}},"
                  "\"required\":[\"l\"]}",
                  (const char *[]){"+{\"l\":{\"next\":null}}", "+{\"l\":{\"next\":{\"next\":{\"next\":null}}}}",
                                   "-{\"l\":{\"next\":{}}}", "-{\"l\":null}", NULL});
    check_feature("{\"type\":\"integer\",\"minimum\":10,\"maximum\":12}",
                  (const char *[]){"+10", "+12", "+11", "-9", "-13", "-100", "-1", "-10.0", "--11", NULL});
    check_feature("{\"type\":\"integer\",\"exclusiveMinimum\":-5,\"exclusiveMaximum\":-2,\"multipleOf\":2}",
                  (const char *[]){"+-4", "--2", "--5", "--3", "-4", NULL});
    check_feature("{\"type\":\"number\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":1}",
                  (const char *[]){"+0.5", "+0.000001", "+0.999999", "-0", "-0.0", "-1", "-1.0", "-0.0000001", "-1e-3", NULL});
    check_feature("{\"type\":\"number\",\"minimum\":0.1,\"maximum\":0.1}", (const char *[]){"+0.1", "+0.10", "-0.2", "-0", NULL});
    check_feature("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}",
                  (const char *[]){"+\"ab\"", "+\"\xc3\xa9\xc3\xa9\xc3\xa9\"", "+\"\\u00e9\\n\"", "+\"\\ud83d\\ude00\\ud83d\\ude00\"",
                                   "-\"a\"", "-\"abcd\"", "-\"\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00x\"", NULL});
    check_feature("{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}-\\\\d{4}$\"}",
                  (const char *[]){"+\"ABC-1234\"", "-\"AB-1234\"", "-\"ABC-12345\"", "-\"abc-1234\"", NULL});
    check_feature("{\"type\":\"string\",\"pattern\":\"^a\\\\nb\\\"$\"}", (const char *[]){"+\"a\\nb\\\"\"", "-\"ab\"", NULL});
    check_feature("{\"type\":\"string\",\"pattern\":\"colou?r\"}",
                  (const char *[]){"+\"colour\"", "+\"my color!\"", "-\"colr\"", "-\"colo\\nr\"", NULL});
    check_feature("{\"type\":\"string\",\"pattern\":\"^\xc3\xa9+$\"}", (const char *[]){"+\"\xc3\xa9\xc3\xa9\"", "-\"e\"", "-\"\"", NULL});
    check_feature("{\"type\":\"string\",\"pattern\":\"^(?<y>\\\\d{2})a{b$\"}", /* a named group; '{' as a literal */
                  (const char *[]){"+\"12a{b\"", "-\"1a{b\"", "-\"12ab\"", NULL});
    check_feature("{\"type\":\"string\",\"format\":\"uuid\"}",
                  (const char *[]){"+\"123e4567-e89b-12d3-a456-426614174000\"", "-\"123e4567\"", NULL});
    check_feature("{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,\"maxItems\":3}",
                  (const char *[]){"+[1,2]", "+[1,2,3]", "-[1]", "-[]", "-[1,2,3,4]", NULL});
    check_feature("{\"enum\":[{\"x\":[1,2]},[true],\"s\"]}", (const char *[]){"+{\"x\":[1,2]}", "+[true]", "+\"s\"", "-{}", NULL});
    check_feature("{\"type\":\"string\",\"enum\":[\"a\",1,\"b\"]}", (const char *[]){"+\"a\"", "+\"b\"", "-1", NULL});
    check_feature("!{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\",\"maximum\":5}}",
                  (const char *[]){"+{\"k\":5,\"j\":-1}", "-{\"k\":6}", "-{\"k\":\"v\"}", NULL});
}

/* Recursion at the depth limit: a node that is an integer or {"c": node, "o": {"x": any}?} nests objects
 * while the shortest instance of one more still fits in JC_MAX_DEPTH frames; past that only the integer may
 * begin (the object alternative is not forked), an optional property is offered only where its value
 * fits, and every state left can still close. */
static void check_depth_limit(void) {
    srv_err e;
    srv_jc_schema *s = compile("{\"type\":\"object\",\"$defs\":{\"n\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":"
                               "\"object\",\"properties\":{\"c\":{\"$ref\":\"#/$defs/n\"},\"o\":{\"type\":\"object\",\"properties\":"
                               "{\"x\":{}},\"required\":[\"x\"]}},\"required\":[\"c\"]}]}},"
                               "\"properties\":{\"a\":{\"$ref\":\"#/$defs/n\"}},\"required\":[\"a\"]}", &e);
    CHECKF(s, "%s", e.msg);
    if (!s) return;
    char doc[512] = "{\"a\":";
    for (int i = 0; i < JC_MAX_DEPTH - 2; i++) strcat(doc, "{\"c\":"); /* objects at frames 1..22 */
    srv_jc_state st;
    srv_jc_init(&st, s);
    CHECK(srv_jc_feed(&st, doc, strlen(doc)));
    srv_jc_state deeper;
    srv_jc_copy(&deeper, &st);
    CHECK(!srv_jc_feed(&deeper, "{", 1)); /* frame 23: an object would need a key frame and a value frame */
    srv_jc_copy(&deeper, &st); /* the optional "o" needs 2 frames above its object: not at frame 22, at 21 */
    CHECK(!srv_jc_feed(&deeper, "1,", 2));
    srv_jc_copy(&deeper, &st);
    CHECK(srv_jc_feed(&deeper, "1},\"o\":{\"x\":", 12));
    char comp[256];
    srv_jc_completion(&st, comp, sizeof comp);
    CHECK(srv_jc_feed(&st, comp, strlen(comp)) && srv_jc_done(&st));
    srv_jc_schema_free(s);
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

/* A byte-level toy vocabulary: every printable byte, whitespace, escapes, multi-byte pieces, lone UTF-8
 * leads and continuations (must pair up), and some JSON-looking chunks. */
static const char *VOCAB[256];
static int n_vocab;

static void make_vocab(void) {
    static char singles[100][2];
    for (int c = 0x20; c < 0x7f; c++) singles[c - 0x20][0] = (char)c, VOCAB[n_vocab++] = singles[c - 0x20];
    const char *more[] = {"\n", "\t", "  ", "\n  ", "\xc3", "\xa9", "\xc3\xa9", "\xe2\x82\xac", "\xe0", "\xa0", "\x80",
                          "\xed", "\xf0\x9f\x98\x80", "\xff", "\"name\"", "\": \"", "\":", "true", "false", "null", "123",
                          "-0.5", "e+", "{\"", "\"}", "}}", "]}", "[{", "\",\"", "abc", "\\u00", "\\n", "\\t", "\\\"",
                          "\\\\", "\\ud83d", "celsius", "\"unit\": ", "\"steps\": [", "\"explanation\"", "\"x\":1",
                          "ABC", "-12", "00", "2024", "T12", ":30:", "Z", "@", ".com", "foo", "bar", "circle", "rect",
                          "\"kind\":\"", "0.", "1e", "null}", "[]", "{}"};
    for (size_t i = 0; i < sizeof more / sizeof *more; i++) VOCAB[n_vocab++] = more[i];
}

/* One walk: tokens drawn uniformly; one the automaton refuses is replaced by a uniform draw from the mask.
 * Ends when the value closes or the budget (the shortest completion + 2 + up to slack tokens) is spent.
 * out: the text; returns whether the value closed. */
static bool walk(const srv_jc_schema *s, const srv_jc_vocab *v, uint8_t *allowed, int slack, char *out, size_t cap,
                 int *masked) {
    srv_jc_state st;
    srv_jc_init(&st, s);
    char comp[1024];
    int budget = (int)srv_jc_completion(&st, comp, sizeof comp) + 2 + (int)(rnd() % (uint32_t)slack);
    size_t len = 0;
    while (!srv_jc_done(&st) && budget > 0) {
        int32_t tok = (int32_t)(rnd() % (uint32_t)n_vocab);
        if (!srv_jc_token_ok(&st, v, budget, tok)) {
            (*masked)++;
            int k = srv_jc_mask(&st, v, budget, allowed);
            out[len < cap ? len : cap - 1] = 0;
            CHECKF(k > 0, "nothing allowed after '%s'", out);
            if (k == 0) break;
            int pick = (int)(rnd() % (uint32_t)k);
            for (tok = 0; tok < n_vocab; tok++)
                if (allowed[tok] && pick-- == 0) break;
            CHECK(srv_jc_token_ok(&st, v, budget, tok));
        }
        CHECK(srv_jc_feed(&st, VOCAB[tok], strlen(VOCAB[tok])));
        size_t tl = strlen(VOCAB[tok]);
        if (len + tl < cap) memcpy(out + len, VOCAB[tok], tl), len += tl;
        budget--;
    }
    out[len] = 0;
    return srv_jc_done(&st);
}

static void check_random_walks(const srv_jc_vocab *v, uint8_t *allowed) {
    int walks = 0, parsed = 0, masked = 0;
    for (size_t si = 0; si < sizeof SCHEMAS / sizeof *SCHEMAS; si++) {
        srv_err e;
        json_t *sj = SCHEMAS[si] ? json_loads(SCHEMAS[si], 0, NULL) : NULL;
        srv_jc_schema *s = NULL;
        CHECKF(srv_jc_compile(sj, &s, &e) == 0, "schema %zu: %s", si, e.msg);
        for (int seed = 1; s && seed <= 150; seed++) {
            rng = 0x9E3779B97F4A7C15ull * (uint64_t)(seed + 1000 * (int)si);
            char out[4096];
            bool closed = walk(s, v, allowed, 120, out, sizeof out, &masked);
            walks++;
            CHECKF(closed, "schema %zu seed %d: not closed within the budget: '%s'", si, seed, out);
            json_error_t je;
            json_t *doc = json_loads(out, JSON_ALLOW_NUL, &je);
            CHECKF(doc && valid(sj, doc), "schema %zu seed %d: '%s' (%s)", si, seed, out, doc ? "invalid" : je.text);
            parsed += doc && valid(sj, doc);
            json_decref(doc);
        }
        srv_jc_schema_free(s);
        json_decref(sj);
    }
    printf("random walks: %d of %d valid documents (%d masked steps)\n", parsed, walks, masked);
}

/* --walk: JSON lines for test_jsonc_walks.py. */
static int walk_corpus(const char *path, int n, const srv_jc_vocab *v, uint8_t *allowed) {
    json_error_t je;
    json_t *corpus = json_load_file(path, 0, &je);
    if (!corpus) return fprintf(stderr, "%s: %s\n", path, je.text), 1;
    const char *name;
    json_t *schema;
    int masked = 0;
    json_object_foreach(json_object_get(corpus, "valid"), name, schema) {
        srv_err e = {0};
        srv_jc_schema *s = NULL;
        if (srv_jc_compile(schema, &s, &e)) {
            printf("{\"name\":\"%s\",\"error\":\"compile failed\"}\n", name);
            fprintf(stderr, "%s: %s\n", name, e.msg);
            continue;
        }
        for (int seed = 1; seed <= n; seed++) {
            rng = 0x9E3779B97F4A7C15ull * (uint64_t)seed + (uint64_t)strlen(name) * 7919u + (uint64_t)name[0];
            static char out[1 << 16], hex[1 << 17];
            bool closed = walk(s, v, allowed, 200, out, sizeof out, &masked);
            for (size_t i = 0; out[i]; i++) snprintf(hex + 2 * i, 3, "%02x", (unsigned char)out[i]);
            hex[2 * strlen(out)] = 0;
            printf("{\"name\":\"%s\",\"seed\":%d,\"closed\":%s,\"hex\":\"%s\"}\n", name, seed, closed ? "true" : "false", hex);
        }
        srv_jc_schema_free(s);
    }
    size_t i;
    json_array_foreach(json_object_get(corpus, "refused"), i, schema) {
        srv_err e = {0};
        srv_jc_schema *s = NULL;
        int rc = srv_jc_compile(json_object_get(schema, "schema"), &s, &e);
        json_t *line = json_pack("{s:i,s:i,s:s}", "refused", (int)i, "status", rc ? e.status : 0, "error", rc ? e.msg : "");
        char *t = json_dumps(line, JSON_COMPACT);
        printf("%s\n", t);
        free(t), json_decref(line);
        srv_jc_schema_free(s);
    }
    json_decref(corpus);
    fprintf(stderr, "walks: %d masked steps\n", masked);
    return check_failed ? 1 : 0;
}

int main(int argc, char **argv) {
    make_vocab();
    srv_jc_vocab *v = srv_jc_vocab_from_texts(VOCAB, n_vocab);
    uint8_t *allowed = malloc((size_t)n_vocab);
    int rc;
    if (argc == 4 && !strcmp(argv[1], "--walk")) {
        rc = walk_corpus(argv[2], atoi(argv[3]), v, allowed);
    } else {
        check_automaton();
        check_features();
        check_depth_limit();
        check_random_walks(v, allowed);
        rc = check_report("test_server_jsonc");
    }
    free(allowed);
    srv_jc_vocab_free(v);
    return rc;
}
