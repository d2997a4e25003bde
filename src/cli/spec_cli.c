#include "cli/spec_cli.h"

#include <string.h>

#include "cli/args.h"

void spec_cli_init(spec_cli *a) {
    *a = (spec_cli){.p = llm170_spec_default_params()};
}

bool spec_cli_flag(const char *cmd, const char *flag, const char *value, spec_cli *a, bool *ok) {
    int adaptive = a->p.adaptive;
    if (!strcmp(flag, "--spec")) {
        int t = llm170_spec_type_from_name(value);
        if (t < 0) fprintf(stderr, "llm170 %s: --spec: %s\n", cmd, llm170_last_error());
        else a->p.type = t;
        *ok = t >= 0;
    } else if (!strcmp(flag, "--draft-max")) *ok = args_int(cmd, flag, value, 1, 32, &a->p.draft_max);
    else if (!strcmp(flag, "--draft-min")) *ok = args_int(cmd, flag, value, 1, 32, &a->p.draft_min);
    else if (!strcmp(flag, "--model-draft") || !strcmp(flag, "-md")) a->draft_path = value, *ok = true;
    else if (!strcmp(flag, "--spec-adaptive")) {
        *ok = args_int(cmd, flag, value, 0, 1, &adaptive);
        a->p.adaptive = adaptive;
    } else return false;
    return true;
}

const char *spec_cli_usage(void) {
    return "[--spec none|ngram|draft|mtp] [--draft-max N] [--draft-min N] [--model-draft F] [--spec-adaptive 0|1]";
}

bool spec_cli_load(const char *cmd, spec_cli *a, const llm170_model_params *mp) {
    if (a->p.draft_min > a->p.draft_max) {
        fprintf(stderr, "llm170 %s: --draft-min %d exceeds --draft-max %d\n", cmd, a->p.draft_min, a->p.draft_max);
        return false;
    }
    if (a->draft_path && a->p.type != LLM170_SPEC_DRAFT) {
        fprintf(stderr, "llm170 %s: --model-draft needs --spec draft\n", cmd);
        return false;
    }
    if (a->p.type != LLM170_SPEC_DRAFT) return true;
    if (!a->draft_path) {
        fprintf(stderr, "llm170 %s: --spec draft needs --model-draft FILE\n", cmd);
        return false;
    }
    if (llm170_model_load(a->draft_path, mp, &a->draft)) {
        fprintf(stderr, "llm170 %s: draft model: %s\n", cmd, llm170_last_error());
        return false;
    }
    a->p.draft_model = a->draft;
    return true;
}

void spec_cli_free(spec_cli *a) {
    llm170_model_free(a->draft);
    a->draft = NULL;
}

void spec_cli_stats_add(llm170_spec_stats *sum, const llm170_spec_stats *st) {
    sum->tokens += st->tokens, sum->rounds += st->rounds, sum->plain_steps += st->plain_steps;
    sum->drafted += st->drafted, sum->accepted += st->accepted;
    sum->t_draft += st->t_draft, sum->t_verify += st->t_verify, sum->t_plain += st->t_plain;
    sum->t_rollback += st->t_rollback;
}

void spec_cli_report(FILE *f, const spec_cli *a, const llm170_spec_stats *st) {
    static const char *names[] = {"none", "ngram", "draft", "mtp"};
    const int64_t passes = st->rounds + st->plain_steps;
    fprintf(f, "spec %s: %lld tokens in %lld passes (%.2f per pass); %lld rounds: %lld of %lld drafts kept (%.1f%%), "
            "%.2f per round; %lld plain steps\n", names[a->p.type], (long long)st->tokens, (long long)passes,
            passes ? (double)st->tokens / passes : 0.0, (long long)st->rounds, (long long)st->accepted,
            (long long)st->drafted, st->drafted ? 100.0 * st->accepted / st->drafted : 0.0,
            st->rounds ? (double)st->accepted / st->rounds : 0.0, (long long)st->plain_steps);
    /* what the rounds cost against their tokens at the plain steps' measured price: on text that does not
       repeat, the price of probing (a load-independent account, where the t/s ratio moves by a few % run to run) */
    const int64_t round_tokens = st->tokens - st->plain_steps;
    if (st->rounds > 0 && st->plain_steps > 0 && st->t_plain > 0) {
        const double per = st->t_plain / st->plain_steps;
        const double spent = st->t_draft + st->t_verify + st->t_rollback, plain = per * round_tokens;
        fprintf(f, "spec %s rounds: %.3f s drafting + verifying + rolling back for %lld tokens, %.3f s at the plain "
                "steps' %.1f ms a token: %+.1f%% of the whole generation's plain time\n", names[a->p.type], spent,
                (long long)round_tokens, plain, 1e3 * per, 100.0 * (spent - plain) / (per * st->tokens));
    }
}
