/* engine_check: a model run on a reference device and a device under test through the public API, logits
 * and greedy streams compared (engine_check.c states the tolerance and its basis). Used by
 * `llm170 cuda-check --engine`. */
#ifndef LLM170_CLI_ENGINE_CHECK_H
#define LLM170_CLI_ENGINE_CHECK_H

/* Prints the table header (dsame: as engine_check_model's, or NULL). */
void engine_check_header(const char *dref, const char *ddut, const char *dsame);
/* Runs the model file at path on both devices (two prompts, 16 greedy steps each) and prints one row per
 * prompt; returns 0 if every comparison passed. dsame: NULL, or a device whose logits must equal ddut's
 * bit for bit at every step (ddut with its CUDA graphs off). */
int engine_check_model(const char *path, const char *label, const char *dref, const char *ddut, const char *dsame,
                       int n_threads);

#endif
