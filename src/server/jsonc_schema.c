/* srv jsonc schema: a JSON schema compiled into jc_nodes (see jsonc.h for the subset and why). This file
 * reads the schema's keywords into nodes; jsonc_link.c then resolves $refs, flattens anyOf, checks oneOf
 * and finds every node's shortest instance. */
#include <stdlib.h>
#include <string.h>

#include "server/jsonc_impl.h"

#define MAX_NEST 64 /* schema objects inside each other, $refs followed included: bounds the C recursion */

/* keywords without effect on which values are valid (and $defs, read only through $ref) */
static const char *const ANNOTATIONS[] = {"title",    "description", "default",  "examples",    "deprecated",
                                          "readOnly", "writeOnly",   "$schema",  "$id",         "$comment",
                                          "$anchor",  "strict",      "$defs",    "definitions", "discriminator"};
static const char *const KEYWORDS[] = {
    "type",      "properties", "required",  "additionalProperties", "items",   "minItems",         "maxItems",
    "minLength", "maxLength",  "pattern",   "format",               "minimum", "exclusiveMinimum", "maximum",
    "exclusiveMaximum", "multipleOf", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "uniqueItems"};

static bool in(const char *k, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k, list[i])) return true;
    return false;
}

static bool annotation(const char *k) { return in(k, ANNOTATIONS, sizeof ANNOTATIONS / sizeof *ANNOTATIONS); }

static int oom(jc_build *b) { return srv_fail(b->e, 400, NULL, "out of memory compiling the schema"); }

void *jc_room(jc_build *b, void *arr, int n, int more, int *cap, size_t elem) {
    if (n + more <= *cap) return arr;
    int c = 2 * (n + more);
    void *t = realloc(arr, elem * (size_t)c);
    if (!t) oom(b);
    else *cap = c;
    return t;
}

int jc_new_node(jc_build *b, uint8_t kind) {
    srv_jc_schema *s = b->s;
    jc_node *t = jc_room(b, s->nodes, s->n_nodes, 1, &b->cap_nodes, sizeof *t);
    if (!t) return -1;
    s->nodes = t;
    if (s->n_nodes >= UINT16_MAX - 1) return srv_fail(b->e, 400, "response_format", "the schema has too many parts");
    s->nodes[s->n_nodes] = (jc_node){.kind = kind, .items = -1, .max = UINT32_MAX, .dfa = -1, .num = -1};
    return s->n_nodes++;
}

/* Appends a literal (takes text). */
static int new_lit(jc_build *b, char *text, int node) {
    srv_jc_schema *s = b->s;
    if (!text) return oom(b);
    int cap = b->cap_lits; /* lits and lit_node grow together */
    char **t = jc_room(b, s->lits, s->n_lits, 1, &cap, sizeof *t);
    if (t) s->lits = t;
    int *tn = t ? jc_room(b, s->lit_node, s->n_lits, 1, &b->cap_lits, sizeof *tn) : NULL;
    if (!tn) {
        free(text);
        return -1;
    }
    s->lit_node = tn;
    s->lits[s->n_lits] = text;
    s->lit_node[s->n_lits] = node;
    return s->n_lits++;
}

static char *dump(const json_t *v) { return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT); }

static int compile(jc_build *b, const json_t *v, const char *path, int depth);

/* An enum of the given values; base: a node they must also satisfy (-1: none), checked by the linker. */
static int compile_enum(jc_build *b, const json_t *vals, int base, const char *path) {
    if (!json_is_array(vals) || json_array_size(vals) == 0 || json_array_size(vals) > JC_MAX_PROPS)
        return srv_fail(b->e, 400, "response_format", "%s: enum must be an array of 1..%d values", path, JC_MAX_PROPS);
    int id = jc_new_node(b, JC_ENUM);
    if (id < 0) return -1;
    b->s->nodes[id].first = b->s->n_lits;
    b->s->nodes[id].items = base;
    for (size_t i = 0; i < json_array_size(vals); i++)
        if (new_lit(b, dump(json_array_get(vals, i)), -1) < 0) return -1;
    b->s->nodes[id].n = (int)json_array_size(vals);
    return id;
}

static int compile_object(jc_build *b, const json_t *v, const char *path, int depth) {
    const json_t *props = json_object_get(v, "properties"), *req = json_object_get(v, "required"),
                 *addl = json_object_get(v, "additionalProperties");
    if (props && !json_is_object(props))
        return srv_fail(b->e, 400, "response_format", "%s.properties must be an object", path);
    size_t np = props ? json_object_size(props) : 0;
    if (np > JC_MAX_PROPS)
        return srv_fail(b->e, 400, "response_format", "%s: at most %d properties, got %zu", path, JC_MAX_PROPS, np);
    int extra = -1;
    if (addl && !json_is_boolean(addl)) { /* a schema: the values of free-form keys (checked for support anyway) */
        char p[256];
        snprintf(p, sizeof p, "%.200s.additionalProperties", path);
        if ((extra = compile(b, addl, p, depth + 1)) < 0) return -1;
    }
    int id = jc_new_node(b, JC_OBJECT);
    if (id < 0) return -1;
    jc_node *n = &b->s->nodes[id];
    /* no properties and extra ones allowed: a free-form object */
    n->free_keys = np == 0 && !json_is_false(addl);
    n->closed = json_is_false(addl);
    n->items = n->free_keys ? extra : -1;
    n->first = b->s->n_lits;
    n->n = (int)np;
    const char *key;
    const json_t *sub;
    /* the key literals first, contiguous; the value nodes after (they may add literals of their own) */
    json_object_foreach((json_t *)props, key, sub) {
        json_t *k = json_string(key);
        int rc = k ? new_lit(b, dump(k), -1) : oom(b);
        json_decref(k);
        if (rc < 0) return -1;
    }
    int first = n->first, i = 0;
    json_object_foreach((json_t *)props, key, sub) {
        char p[256];
        snprintf(p, sizeof p, "%.160s.properties.%.64s", path, key);
        int child = compile(b, sub, p, depth + 1);
        if (child < 0) return -1;
        b->s->lit_node[first + i++] = child;
    }
    if (req && !json_is_array(req)) return srv_fail(b->e, 400, "response_format", "%s.required must be an array", path);
    for (size_t r = 0; req && r < json_array_size(req); r++) {
        const char *name = json_string_value(json_array_get(req, r));
        int found = -1;
        i = 0;
        json_object_foreach((json_t *)props, key, sub) {
            if (name && !strcmp(key, name)) found = i;
            i++;
        }
        if (found < 0)
            return srv_fail(b->e, 400, "response_format", "%s.required names '%.64s', which is not in properties", path,
                            name ? name : "(not a string)");
        b->s->nodes[id].required |= 1ull << found;
    }
    return id;
}

/* A non-negative integer keyword into *out (absent: unchanged). */
static int count_kw(jc_build *b, const json_t *v, const char *k, const char *path, uint32_t *out) {
    const json_t *x = json_object_get(v, k);
    if (!x) return 0;
    if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > (1 << 20))
        return srv_fail(b->e, 400, "response_format", "%s.%s must be an integer in 0..1048576", path, k);
    *out = (uint32_t)json_integer_value(x);
    return 0;
}

static int compile_string(jc_build *b, const json_t *v, const char *path) {
    int id = jc_new_node(b, JC_STRING);
    if (id < 0) return -1;
    jc_node n = b->s->nodes[id];
    if (count_kw(b, v, "minLength", path, &n.min) || count_kw(b, v, "maxLength", path, &n.max)) return -1;
    const json_t *pat = json_object_get(v, "pattern"), *fmt = json_object_get(v, "format");
    if ((pat && !json_is_string(pat)) || (fmt && !json_is_string(fmt)))
        return srv_fail(b->e, 400, "response_format", "%s: pattern and format must be strings", path);
    const char *re = pat ? json_string_value(pat) : NULL;
    if (fmt && !(re = pat ? NULL : jc_format_regex(json_string_value(fmt))))
        return srv_fail(b->e, 400, "response_format", pat ? "%s: pattern and format together are not supported"
                        : "%s: format '%.40s' is not supported (supported: date, time, date-time, duration, email, "
                        "hostname, ipv4, ipv6, uuid)", path, json_string_value(fmt));
    if (re && (n.min > 0 || n.max != UINT32_MAX))
        return srv_fail(b->e, 400, "response_format", "%s: minLength/maxLength together with a pattern or format are not "
                        "supported", path);
    if (n.min > n.max) return srv_fail(b->e, 400, "response_format", "%s: minLength is above maxLength", path);
    if (re) {
        srv_jc_schema *s = b->s;
        jc_dfa *t = jc_room(b, s->dfas, s->n_dfas, 1, &b->cap_dfas, sizeof *t);
        if (!t) return -1;
        s->dfas = t;
        char why[200];
        if (jc_regex_compile(re, &s->dfas[s->n_dfas], why, sizeof why))
            return srv_fail(b->e, 400, "response_format", "%s.pattern: %s", path, why);
        n.dfa = s->n_dfas++;
    }
    b->s->nodes[id] = n;
    return id;
}

static int compile_number(jc_build *b, const json_t *v, bool integer, const char *path) {
    int id = jc_new_node(b, integer ? JC_INTEGER : JC_NUMBER);
    if (id < 0) return -1;
    static const char *const bounds[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"};
    bool any = false;
    for (int i = 0; i < 5; i++) any |= json_object_get(v, bounds[i]) != NULL;
    if (!any) return id;
    srv_jc_schema *s = b->s;
    jc_num *t = jc_room(b, s->nums, s->n_nums, 1, &b->cap_nums, sizeof *t);
    if (!t) return -1;
    s->nums = t;
    if (jc_num_bounds(v, integer, path, &s->nums[s->n_nums], b->e)) return -1;
    s->nodes[id].num = s->n_nums++;
    return id;
}

static int compile_array(jc_build *b, const json_t *v, const char *path, int depth) {
    const json_t *items = json_object_get(v, "items");
    if (items && !json_is_object(items) && !json_is_true(items))
        return srv_fail(b->e, 400, "response_format", "%s.items must be one schema (tuple forms are not supported)", path);
    uint32_t min = 0, max = UINT32_MAX;
    if (count_kw(b, v, "minItems", path, &min) || count_kw(b, v, "maxItems", path, &max)) return -1;
    if (min > max) return srv_fail(b->e, 400, "response_format", "%s: minItems is above maxItems", path);
    int child = -1;
    if (items) {
        char p[256];
        snprintf(p, sizeof p, "%.200s.items", path);
        if ((child = compile(b, items, p, depth + 1)) < 0) return -1;
    }
    int id = jc_new_node(b, JC_ARRAY);
    if (id < 0) return -1;
    b->s->nodes[id].items = child, b->s->nodes[id].min = min, b->s->nodes[id].max = max;
    return id;
}

/* One JSON type: the node of v read as that type (other types' keywords do not apply to it). */
static int compile_type(jc_build *b, const json_t *v, const char *t, const char *path, int depth) {
    if (!strcmp(t, "object")) return compile_object(b, v, path, depth);
    if (!strcmp(t, "array")) return compile_array(b, v, path, depth);
    if (!strcmp(t, "string")) return compile_string(b, v, path);
    if (!strcmp(t, "number") || !strcmp(t, "integer")) return compile_number(b, v, t[1] == 'n', path);
    if (!strcmp(t, "boolean") || !strcmp(t, "null")) {
        json_t *vals = !strcmp(t, "null") ? json_pack("[n]") : json_pack("[b,b]", 1, 0);
        int id = vals ? compile_enum(b, vals, -1, path) : oom(b);
        json_decref(vals);
        return id;
    }
    return srv_fail(b->e, 400, "response_format", "%s.type '%.32s' is not a JSON schema type", path, t);
}

/* The one type implied by type-specific keywords in a schema without "type"; NULL: no such keyword (any
 * value); "" with e filled: keywords of several types. */
static const char *implied_type(jc_build *b, const json_t *v, const char *path) {
    static const char *const fam[][6] = {
        {"object", "properties", "required", "additionalProperties", NULL},
        {"array", "items", "minItems", "maxItems", NULL},
        {"string", "minLength", "maxLength", "pattern", "format", NULL},
        {"number", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    };
    const char *t = NULL;
    for (size_t f = 0; f < 4; f++)
        for (int k = 1; k < 6 && fam[f][k]; k++)
            if (json_object_get(v, fam[f][k])) {
                if (t && t != fam[f][0]) {
                    srv_fail(b->e, 400, "response_format", "%s: keywords of several types without a \"type\" (give "
                             "\"type\", or anyOf)", path);
                    return "";
                }
                t = fam[f][0];
            }
    return t;
}

/* Keywords beside an applicator ($ref, anyOf, oneOf, allOf) must be annotations: they would apply too. */
static int only_annotations(jc_build *b, const json_t *v, const char *app, const char *path) {
    const char *key;
    const json_t *sub;
    json_object_foreach((json_t *)v, key, sub) {
        if (strcmp(key, app) && !annotation(key))
            return srv_fail(b->e, 400, "response_format", "%s: '%.32s' beside '%s' is not supported (move it into each "
                            "alternative or the referenced schema)", path, key, app);
    }
    return 0;
}

/* Resolves a local JSON pointer ("#", "#/a/b~1c") against the document. */
static const json_t *resolve_pointer(const json_t *doc, const char *ref) {
    if (ref[0] != '#') return NULL;
    const json_t *cur = doc;
    const char *p = ref + 1;
    while (cur && *p) {
        if (*p != '/') return NULL;
        p++;
        char tok[256];
        size_t n = 0;
        for (; *p && *p != '/' && n + 1 < sizeof tok; p++) {
            if (*p == '~' && (p[1] == '0' || p[1] == '1')) tok[n++] = p[1] == '0' ? '~' : '/', p++;
            else tok[n++] = *p;
        }
        tok[n] = 0;
        if (json_is_object(cur)) cur = json_object_get(cur, tok);
        else if (json_is_array(cur)) cur = json_array_get(cur, (size_t)strtoul(tok, NULL, 10));
        else cur = NULL;
    }
    return cur;
}

static int compile_ref(jc_build *b, const json_t *v, const char *path, int depth) {
    const char *ref = json_string_value(json_object_get(v, "$ref"));
    if (!ref) return srv_fail(b->e, 400, "response_format", "%s.$ref must be a string", path);
    const json_t *target = resolve_pointer(b->doc, ref);
    if (!target)
        return srv_fail(b->e, 400, "response_format", "%s.$ref '%.80s': only references inside the schema (\"#\", "
                        "\"#/$defs/name\", a JSON pointer) are supported, and this one names nothing", path, ref);
    for (int i = 0; i < b->n_refs; i++)
        if (b->refs[i].target == target) return b->refs[i].node;
    int id = jc_new_node(b, JC_REF);
    if (id < 0) return -1;
    struct jc_ref *t = jc_room(b, b->refs, b->n_refs, 1, &b->cap_refs, sizeof *t);
    if (!t) return -1;
    b->refs = t;
    b->refs[b->n_refs++] = (struct jc_ref){target, id};
    char p[256];
    snprintf(p, sizeof p, "%.200s", ref);
    int to = compile(b, target, p, depth + 1);
    if (to < 0) return -1;
    b->s->nodes[id].items = to;
    return id;
}

/* An anyOf (one_of: oneOf) node over ready nodes ids[0..n). */
static int new_alternatives(jc_build *b, const int *ids, int n, bool one_of) {
    srv_jc_schema *s = b->s;
    int *t = jc_room(b, s->alts, s->n_alts, n, &b->cap_alts, sizeof *t);
    if (!t) return -1;
    s->alts = t;
    int id = jc_new_node(b, JC_ANYOF);
    if (id < 0) return -1;
    s->nodes[id].one_of = one_of, s->nodes[id].first = s->n_alts, s->nodes[id].n = n;
    memcpy(s->alts + s->n_alts, ids, sizeof *ids * (size_t)n);
    s->n_alts += n;
    return id;
}

/* anyOf / oneOf: a node whose alternatives are the compiled schemas (the linker flattens and checks). */
static int compile_alternatives(jc_build *b, const json_t *v, const char *key, const char *path, int depth) {
    const json_t *list = json_object_get(v, key);
    if (!json_is_array(list) || json_array_size(list) == 0 || json_array_size(list) > 64)
        return srv_fail(b->e, 400, "response_format", "%s.%s must be an array of 1..64 schemas", path, key);
    if (only_annotations(b, v, key, path)) return -1;
    int ids[64], n = (int)json_array_size(list);
    for (int i = 0; i < n; i++) {
        char p[256];
        snprintf(p, sizeof p, "%.200s.%s[%d]", path, key, i);
        if ((ids[i] = compile(b, json_array_get(list, i), p, depth + 1)) < 0) return -1;
    }
    return new_alternatives(b, ids, n, key[0] == 'o');
}

static int compile(jc_build *b, const json_t *v, const char *path, int depth) {
    if (depth >= MAX_NEST)
        return srv_fail(b->e, 400, "response_format", "%s: the schema nests deeper than %d (counting $refs)", path, MAX_NEST);
    if (json_is_true(v)) return jc_new_node(b, JC_ANY);
    if (!json_is_object(v)) return srv_fail(b->e, 400, "response_format", "%s must be a schema object", path);
    const char *key;
    const json_t *sub;
    json_object_foreach((json_t *)v, key, sub) {
        if (!annotation(key) && !in(key, KEYWORDS, sizeof KEYWORDS / sizeof *KEYWORDS))
            return srv_fail(b->e, 400, "response_format", "%s: the schema keyword '%.64s' is not supported", path, key);
    }
    if (json_is_true(json_object_get(v, "uniqueItems")))
        return srv_fail(b->e, 400, "response_format", "%s: uniqueItems true is not supported", path);
    if (json_object_get(v, "$ref")) return only_annotations(b, v, "$ref", path) ? -1 : compile_ref(b, v, path, depth);
    const json_t *all = json_object_get(v, "allOf");
    if (all) {
        if (!json_is_array(all) || json_array_size(all) != 1)
            return srv_fail(b->e, 400, "response_format", "%s: allOf is supported with one schema only", path);
        return only_annotations(b, v, "allOf", path) ? -1 : compile(b, json_array_get(all, 0), path, depth + 1);
    }
    if (json_object_get(v, "anyOf") && json_object_get(v, "oneOf"))
        return srv_fail(b->e, 400, "response_format", "%s: anyOf and oneOf together are not supported", path);
    if (json_object_get(v, "anyOf")) return compile_alternatives(b, v, "anyOf", path, depth);
    if (json_object_get(v, "oneOf")) return compile_alternatives(b, v, "oneOf", path, depth);
    const json_t *en = json_object_get(v, "enum"), *cn = json_object_get(v, "const");
    if (en || cn) { /* the values, each checked against the other keywords (type, bounds ...) by the linker */
        json_t *rest = json_copy((json_t *)v), *vals = cn ? json_pack("[O]", cn) : json_incref((json_t *)en);
        if (!rest || !vals) return json_decref(rest), json_decref(vals), oom(b);
        json_object_del(rest, "enum");
        json_object_del(rest, "const");
        bool constrained = false;
        json_object_foreach(rest, key, sub) constrained |= !annotation(key);
        if (cn && en) {
            bool member = false;
            for (size_t i = 0; i < json_array_size(en); i++) member |= json_equal(json_array_get(en, i), cn);
            if (!member) {
                json_decref(rest), json_decref(vals);
                return srv_fail(b->e, 400, "response_format", "%s: const is not one of enum's values", path);
            }
        }
        int base = constrained ? compile(b, rest, path, depth + 1) : -1;
        int id = constrained && base < 0 ? -1 : compile_enum(b, vals, base, path);
        json_decref(rest), json_decref(vals);
        return id;
    }
    const json_t *type = json_object_get(v, "type");
    if (json_is_array(type) && json_array_size(type) == 1) type = json_array_get(type, 0);
    if (json_is_array(type)) { /* a type list: one alternative per type */
        json_t *alts = json_array(), *one = json_object();
        for (size_t i = 0; alts && i < json_array_size(type); i++) {
            json_t *c = json_copy((json_t *)v);
            if (!c || !json_is_string(json_array_get(type, i))) {
                json_decref(c), json_decref(alts), json_decref(one);
                return c ? srv_fail(b->e, 400, "response_format", "%s.type: a list of type names expected", path) : oom(b);
            }
            json_object_set(c, "type", json_array_get(type, i));
            json_array_append_new(alts, c);
        }
        int id = alts && one && !json_object_set(one, "anyOf", alts) ? compile_alternatives(b, one, "anyOf", path, depth) : oom(b);
        json_decref(alts), json_decref(one);
        return id;
    }
    if (type && !json_is_string(type))
        return srv_fail(b->e, 400, "response_format", "%s.type must be a type name or a list of them", path);
    const char *t = type ? json_string_value(type) : implied_type(b, v, path);
    if (t && !*t) return -1;
    return t ? compile_type(b, v, t, path, depth) : jc_new_node(b, JC_ANY);
}

static void build_free(jc_build *b) { free(b->refs); }

int srv_jc_compile(const json_t *schema, srv_jc_schema **out, srv_err *e) {
    *out = NULL;
    jc_build b = {.s = calloc(1, sizeof(srv_jc_schema)), .e = e};
    if (!b.s) return srv_fail(e, 400, NULL, "out of memory compiling the schema");
    json_t *any_obj = schema ? NULL : json_pack("{s:s}", "type", "object");
    b.doc = schema ? schema : any_obj;
    b.s->root = compile(&b, b.doc, "schema", 0);
    int rc = b.s->root < 0 ? -1 : jc_link(&b);
    json_decref(any_obj);
    build_free(&b);
    if (rc) {
        srv_jc_schema_free(b.s);
        return -1;
    }
    *out = b.s;
    return 0;
}

/* A call's object: {"name": <the tool's name>, "arguments": <args node>}, both required, nothing else. */
static int call_node(jc_build *b, const char *name, int args) {
    int id = jc_new_node(b, JC_OBJECT);
    if (id < 0) return -1;
    jc_node *n = &b->s->nodes[id];
    n->closed = true, n->first = b->s->n_lits, n->n = 2, n->required = 3;
    if (new_lit(b, strdup("\"name\""), -1) < 0 || new_lit(b, strdup("\"arguments\""), args) < 0) return -1;
    json_t *names = json_pack("[s]", name);
    int en = names ? compile_enum(b, names, -1, "name") : oom(b);
    json_decref(names);
    if (en < 0) return -1;
    b->s->lit_node[b->s->nodes[id].first] = en;
    return id;
}

int srv_jc_tool_call_schema(const char *tools_json, const char *name, srv_jc_schema **out, srv_err *e) {
    *out = NULL;
    json_t *tools = json_loads(tools_json, 0, NULL), *any_obj = json_pack("{s:s}", "type", "object");
    jc_build b = {.s = calloc(1, sizeof(srv_jc_schema)), .e = e};
    int calls[64], n = 0, rc = -1;
    bool in_params = false; /* a failure to tell as the tools' */
    if (!b.s || !tools || !any_obj) {
        srv_fail(e, 400, NULL, "out of memory compiling the tools' schema");
        goto done;
    }
    for (size_t i = 0; i < json_array_size(tools) && n < 64; i++) {
        json_t *fn = json_object_get(json_array_get(tools, i), "function"), *params = json_object_get(fn, "parameters");
        const char *nm = json_string_value(json_object_get(fn, "name"));
        if (!nm || (name && strcmp(nm, name) != 0)) continue;
        b.doc = params ? params : any_obj; /* each tool's $refs resolve inside its own parameters */
        char p[64];
        snprintf(p, sizeof p, "tools[%zu].parameters", i);
        int args = compile(&b, b.doc, p, 0);
        b.n_refs = 0;
        in_params = args < 0;
        if (args < 0 || (calls[n] = call_node(&b, nm, args)) < 0) goto done;
        n++;
    }
    if (n == 0) srv_fail(e, 400, "tool_choice", "no tool to call");
    else b.s->root = n == 1 ? calls[0] : new_alternatives(&b, calls, n, false);
    in_params = n > 0 && b.s->root >= 0;
    rc = in_params ? jc_link(&b) : -1;
done:
    if (rc && in_params) {
        e->param = "tools";
        snprintf(e->msg + strlen(e->msg), sizeof e->msg - strlen(e->msg), " (in the tools' parameters)");
    }
    json_decref(tools), json_decref(any_obj);
    build_free(&b);
    if (rc) srv_jc_schema_free(b.s);
    else *out = b.s;
    return rc;
}

void srv_jc_schema_free(srv_jc_schema *s) {
    if (!s) return;
    for (int i = 0; i < s->n_lits; i++) free(s->lits[i]);
    for (int i = 0; i < s->n_nodes; i++) free(s->nodes[i].minv);
    for (int i = 0; i < s->n_dfas; i++) jc_dfa_free(&s->dfas[i]);
    free(s->lits), free(s->lit_node), free(s->nodes), free(s->alts), free(s->nums), free(s->dfas);
    free(s);
}
