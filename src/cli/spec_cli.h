/* spec_cli: the speculative decoding flags every decoding subcommand takes (run, infer, bench) and the
 * line that reports a generation's rounds:
 *   --spec none|ngram|draft|mtp   --draft-max N   --draft-min N   --model-draft FILE (-md)
 *   --spec-adaptive 0|1  (1: k follows the acceptance rate and speculation turns itself off where it does
 *                         not pay; 0: always --draft-max, for measurements)
 * Ownership: spec_cli_load loads the draft model into a->draft (freed by spec_cli_free). */
#ifndef LLM170_CLI_SPEC_CLI_H
#define LLM170_CLI_SPEC_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "llm170.h"

typedef struct spec_cli {
    llm170_spec_params p;
    const char *draft_path;
    llm170_model *draft;
} spec_cli;

void spec_cli_init(spec_cli *a);
/* true if flag is one of the flags above (*ok: its value parsed, else a message was printed). */
bool spec_cli_flag(const char *cmd, const char *flag, const char *value, spec_cli *a, bool *ok);
/* The usage text of the flags (one line). */
const char *spec_cli_usage(void);
/* Checks the combination and loads the draft model (same model params as the target); prints errors. */
bool spec_cli_load(const char *cmd, spec_cli *a, const llm170_model_params *mp);
void spec_cli_free(spec_cli *a);
/* "spec ngram: 120 tokens in 40 passes (3.00 per pass); 30 rounds: 95 of 160 drafts kept (59.4%), 3.17
 * per round; 10 plain steps", then (when there were rounds and plain steps) what the rounds cost against
 * their tokens at the plain steps' measured price */
void spec_cli_report(FILE *f, const spec_cli *a, const llm170_spec_stats *st);
/* sum += st: the counts and the seconds of each part, over several generations */
void spec_cli_stats_add(llm170_spec_stats *sum, const llm170_spec_stats *st);

#endif
