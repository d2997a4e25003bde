/* registry: the table of architectures (model.c looks general.architecture up here). */
#include "models/registry.h"

#include <string.h>

static const arch_def *const archs[] = {&arch_qwen35, &arch_qwen35moe, &arch_llama, &arch_qwen2, &arch_qwen3,
                                        &arch_gemma3, &arch_qwen4exp};

const arch_def *arch_find(const char *name) {
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(archs[i]->name, name)) return archs[i];
    return NULL;
}

const char *arch_names(void) { return "qwen35, qwen35moe, llama, qwen2, qwen3, gemma3, qwen4exp"; }

const char *model_arch_name(enum model_arch a) {
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (archs[i]->id == a) return archs[i]->name;
    return "?";
}
