/* cli: the `llm170` binary's subcommands. Each lives in its own cmd_*.c file and is listed once, in the
 * table in main.c. A subcommand gets argv after its name (argv[0] is the subcommand name), prints errors
 * to stderr and returns the process exit status (0 ok, 1 failure, 2 usage error). */
#ifndef LLM170_CLI_CLI_H
#define LLM170_CLI_CLI_H

int cmd_gguf_dump(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_quant_bench(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_infer(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_cuda_check(int argc, char **argv);

#endif
