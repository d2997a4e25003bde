/* args: small helpers for the subcommands' flag parsing (typed values with range checks and messages). */
#ifndef LLM170_CLI_ARGS_H
#define LLM170_CLI_ARGS_H

#include <stdbool.h>
#include <stdint.h>

/* Parses s as an int in [lo, hi] into *out; on failure prints "llm170 CMD: FLAG ..." and returns false. */
bool args_int(const char *cmd, const char *flag, const char *s, long lo, long hi, int *out);
bool args_float(const char *cmd, const char *flag, const char *s, double lo, double hi, float *out);
bool args_u64(const char *cmd, const char *flag, const char *s, uint64_t *out);
/* The value after flag argv[*i] (advancing *i), or NULL with a message if there is none. */
const char *args_value(const char *cmd, int argc, char **argv, int *i);
/* Parses "1,2,3" into a malloc'd array (caller frees) of *n ints; false with a message on bad input. */
bool args_int_list(const char *cmd, const char *flag, const char *s, int32_t **out, int *n);
/* Parses a KV cache type name (f32, f16, bf16, q8_0) into *out (enum llm170_cache_type). */
bool args_cache_type(const char *cmd, const char *flag, const char *s, int *out);
/* Handles --cache-type-k / -ctk and --cache-type-v / -ctv: true if flag is one of them (*ok: parsed). */
bool args_cache_flags(const char *cmd, const char *flag, const char *s, int *k, int *v, bool *ok);
/* Number of online CPUs (at least 1). */
int args_default_threads(void);

#endif
