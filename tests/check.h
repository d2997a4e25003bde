/* check: the few macros our C tests use. A failed CHECK prints file:line and the condition and counts a
 * failure; the test goes on so one run shows every failure. End main with `return check_report(name);`,
 * which prints "name: N passed, N failed" and returns non-zero on any failure. */
#ifndef LLM170_TESTS_CHECK_H
#define LLM170_TESTS_CHECK_H

#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond) CHECKF(cond, "%s", "")
#define CHECKF(cond, ...)                                                              \
    do {                                                                               \
        if (cond) {                                                                    \
            check_passed++;                                                            \
        } else {                                                                       \
            check_failed++;                                                            \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                              \
            fputc('\n', stderr);                                                       \
        }                                                                              \
    } while (0)

static inline int check_report(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
