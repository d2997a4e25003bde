/* srv json: see json.h. */
#include "server/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int srv_fail(srv_err *e, int status, const char *param, const char *fmt, ...) {
    e->status = status;
    e->param = param;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

const char *srv_json_type(const json_t *v) {
    if (!v) return "absent";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

int srv_json_bool(const json_t *o, const char *key, bool *out, srv_err *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) return srv_fail(e, 400, key, "'%s' must be a boolean, got %s", key, srv_json_type(v));
    *out = json_is_true(v);
    return 0;
}

int srv_json_int(const json_t *o, const char *key, long long lo, long long hi, long long *out, srv_err *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v)) return srv_fail(e, 400, key, "'%s' must be an integer, got %s", key, srv_json_type(v));
    long long x = json_integer_value(v);
    if (x < lo || x > hi) return srv_fail(e, 400, key, "'%s' must be in %lld..%lld, got %lld", key, lo, hi, x);
    *out = x;
    return 0;
}

int srv_json_num(const json_t *o, const char *key, double lo, double hi, double *out, srv_err *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_number(v)) return srv_fail(e, 400, key, "'%s' must be a number, got %s", key, srv_json_type(v));
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi)) return srv_fail(e, 400, key, "'%s' must be in %g..%g, got %g", key, lo, hi, x);
    *out = x;
    return 0;
}

int srv_json_str(const json_t *o, const char *key, const char **out, srv_err *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_string(v)) return srv_fail(e, 400, key, "'%s' must be a string, got %s", key, srv_json_type(v));
    *out = json_string_value(v);
    return 0;
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if it is not one (overlongs, surrogates and code
 * points past U+10FFFF are invalid, as jansson requires). */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t k;
    unsigned cp;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) k = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) k = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) k = 4, cp = c & 0x07;
    else return 0;
    if (k > n) return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((k == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (k == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return k;
}

json_t *srv_json_text(const char *s, size_t len) {
    char *buf = malloc(len * 3 + 1); /* each bad byte grows to the 3 bytes of U+FFFD at most */
    if (!buf) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_len((const unsigned char *)s + i, len - i);
        if (k == 0 || (k == 1 && s[i] == 0)) {
            memcpy(buf + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            memcpy(buf + o, s + i, k);
            o += k;
            i += k;
        }
    }
    json_t *v = json_stringn(buf, o);
    free(buf);
    return v;
}

char *srv_json_dump(json_t *v, size_t *len) {
    if (!v) return NULL;
    char *s = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    if (s && len) *len = strlen(s);
    return s;
}

static const char *openai_type(int status) {
    switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "unavailable_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

char *srv_error_openai(const srv_err *e, size_t *len) {
    json_t *err = json_object();
    json_object_set_new(err, "message", srv_json_text(e->msg, strlen(e->msg)));
    json_object_set_new(err, "type", json_string(openai_type(e->status)));
    json_object_set_new(err, "param", e->param ? srv_json_text(e->param, strlen(e->param)) : json_null());
    json_object_set_new(err, "code", e->status == 401 ? json_string("invalid_api_key") : json_null());
    json_t *o = json_object();
    json_object_set_new(o, "error", err);
    return srv_json_dump(o, len);
}

static const char *anthropic_type(int status) {
    switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
    }
}

char *srv_error_anthropic(const srv_err *e, size_t *len) {
    json_t *err = json_object();
    json_object_set_new(err, "type", json_string(anthropic_type(e->status)));
    json_object_set_new(err, "message", srv_json_text(e->msg, strlen(e->msg)));
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string("error"));
    json_object_set_new(o, "error", err);
    return srv_json_dump(o, len);
}
