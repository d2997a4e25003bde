#include "cli/args.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "llm170.h"

bool args_int(const char *cmd, const char *flag, const char *s, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "llm170 %s: %s expects an integer in %ld..%ld, got '%s'\n", cmd, flag, lo, hi, s);
        return false;
    }
    *out = (int)v;
    return true;
}

bool args_float(const char *cmd, const char *flag, const char *s, double lo, double hi, float *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "llm170 %s: %s expects a number in %g..%g, got '%s'\n", cmd, flag, lo, hi, s);
        return false;
    }
    *out = (float)v;
    return true;
}

bool args_u64(const char *cmd, const char *flag, const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || *s == '-') {
        fprintf(stderr, "llm170 %s: %s expects a non-negative integer, got '%s'\n", cmd, flag, s);
        return false;
    }
    *out = v;
    return true;
}

const char *args_value(const char *cmd, int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        fprintf(stderr, "llm170 %s: %s needs a value\n", cmd, argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

bool args_int_list(const char *cmd, const char *flag, const char *s, int32_t **out, int *n) {
    int cap = 16, cnt = 0;
    int32_t *v = malloc(sizeof(int32_t) * (size_t)cap);
    const char *p = s;
    while (v) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (errno || end == p || x < 0 || x > INT32_MAX || (*end && *end != ',')) {
            fprintf(stderr, "llm170 %s: %s expects comma-separated token ids, got '%s'\n", cmd, flag, s);
            free(v);
            return false;
        }
        if (cnt == cap) {
            int32_t *nv = realloc(v, sizeof(int32_t) * (size_t)(cap *= 2));
            if (!nv) break;
            v = nv;
        }
        v[cnt++] = (int32_t)x;
        if (!*end) {
            *out = v;
            *n = cnt;
            return true;
        }
        p = end + 1;
    }
    free(v);
    fprintf(stderr, "llm170 %s: out of memory\n", cmd);
    return false;
}

int args_default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

bool args_cache_type(const char *cmd, const char *flag, const char *s, int *out) {
    int t = llm170_cache_type_from_name(s);
    if (t < 0) {
        fprintf(stderr, "llm170 %s: %s: %s\n", cmd, flag, llm170_last_error());
        return false;
    }
    *out = t;
    return true;
}

bool args_cache_flags(const char *cmd, const char *flag, const char *s, int *k, int *v, bool *ok) {
    if (!strcmp(flag, "--cache-type-k") || !strcmp(flag, "-ctk")) *ok = args_cache_type(cmd, flag, s, k);
    else if (!strcmp(flag, "--cache-type-v") || !strcmp(flag, "-ctv")) *ok = args_cache_type(cmd, flag, s, v);
    else return false;
    return true;
}
