/* conformance: the op-level conformance suite of the executor interface (backends/backend.h): every exec
 * op of a device, called through its op table on device buffers with random non-zero inputs of awkward
 * shapes, against engine/ops_ref.h or plain double loops, each op with its stated tolerance (the header
 * comment of conformance.c). Prints one table row per case to stdout and each failure to stderr. */
#ifndef LLM170_BACKENDS_CONFORMANCE_H
#define LLM170_BACKENDS_CONFORMANCE_H

/* Runs the suite on `device` (a backend_open name). Returns the number of failed checks (0: conformant)
 * and, if n_checks is not NULL, the number of checks made. Not thread-safe (one run at a time). */
int backend_conformance(const char *device, int *n_checks);

#endif
