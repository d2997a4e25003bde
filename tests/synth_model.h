/* synth_model: a tiny synth model for a test, written to a temporary file, loaded and the file removed
 * (the mapping keeps the data). Failures are CHECKs (check.h) and give NULL. */
#ifndef LLM170_TESTS_SYNTH_MODEL_H
#define LLM170_TESTS_SYNTH_MODEL_H

#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "llm170.h"
#include "synth/synth.h"

static inline llm170_model *synth_model_load(const char *preset, const char *mix, uint64_t seed, int n_threads) {
    char path[] = "/tmp/llm170-synth-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return NULL;
    close(fd);
    err e = {0};
    int rc = synth_write(synth_preset_find(preset), synth_mix_from_name(mix), seed, path, NULL, NULL, &e);
    CHECKF(rc == 0, "synth %s: %s", preset, e.msg);
    llm170_model *m = NULL;
    llm170_model_params mp = {.n_threads = n_threads, .exact = false};
    if (!rc) {
        rc = llm170_model_load(path, &mp, &m);
        CHECKF(rc == 0, "load %s: %s", preset, llm170_last_error());
    }
    unlink(path);
    return rc ? NULL : m;
}

#endif
