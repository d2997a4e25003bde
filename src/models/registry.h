/* registry (internal to src/models/): every architecture's table entry, defined in its own file. Adding an
 * architecture: one file with its arch_def, one extern line here and one line in registry.c (see
 * docs/architecture.md, "Adding an architecture"). */
#ifndef LLM170_MODELS_REGISTRY_H
#define LLM170_MODELS_REGISTRY_H

#include "engine/model.h"

extern const arch_def arch_qwen35, arch_qwen35moe; /* qwen35.c */
extern const arch_def arch_llama, arch_qwen2, arch_qwen3; /* llama.c */
extern const arch_def arch_gemma3; /* gemma3.c */
extern const arch_def arch_qwen4exp; /* qwen4exp.c */

#endif
