/* llm170: the command-line entry point. Dispatches to the subcommands listed in `commands`. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#ifdef LLM170_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage; /* one line: arguments */
    const char *what;  /* one line: what it does */
} command;

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const command commands[] = {
    {"help", cmd_help, "", "list the subcommands"},
    {"version", cmd_version, "", "print the version"},
    {"gguf-dump", cmd_gguf_dump, "[--meta-only] [--all-tokens] <file.gguf>",
     "print a GGUF file's metadata, tokenizer summary, tensor table and quantization mix"},
    {"synth", cmd_synth, "--preset NAME --out FILE.gguf [--type MIX] [--seed N] | --list",
     "write a random-weight GGUF in the exact shapes of a real model"},
    {"infer", cmd_infer, "--model M --prompt-tokens 1,2,3 [--prompt-tokens ...] [--n-predict N] [sampling flags]",
     "generate from token-id prompts (parallel sequences in one batch); one JSON line per token"},
    {"run", cmd_run, "--model M [--prompt TEXT] [--system TEXT] [--ctx-size N] [--threads N] [sampling flags]",
     "chat with a model in the terminal (its chat template, streamed replies; /exit, Ctrl-C stops a reply)"},
    {"perplexity", cmd_perplexity, "--model M --file TEXT [--ctx-size 512] [--threads N] [--chunks N]",
     "perplexity of a text file, as llama-perplexity computes it (second half of each n_ctx chunk)"},
    {"bench", cmd_bench, "--model M [-p 512] [-n 128] [-r 5] [-t THREADS] [--device D [--compare-graphs]]",
     "prompt-processing and generation speed, as llama-bench's markdown table"},
    {"serve", cmd_serve, "--model M [--host H] [--port P] [--ctx-size N] [--parallel N] [--api-key K]",
     "OpenAI- and Anthropic-compatible HTTP server with continuous batching"},
    {"quant-bench", cmd_quant_bench, "[--type T,...] [--isa scalar|avx2|avx512|best] [--mb N]",
     "single-thread dequantize and dot-product throughput per quant type"},
    {"tokenize", cmd_tokenize,
     "--model M [--no-bos] [--no-parse-special] (--text S | --file F | --stdin) [--show]",
     "print the token ids of a text ([1, 2, 3]) or, with --show, id and piece per line"},
    {"detokenize", cmd_detokenize, "--model M [--no-special] 1,2,3", "print the text of token ids"},
    {"cuda-check", cmd_cuda_check,
     "[--bench] [--filter S,S...] [--seed N] [--device N] | --engine [--model F]... [--dir D] [-t N] [--device N]",
     "check every CUDA kernel and executor op against the CPU reference (table of max error vs tolerance); "
     "--bench: time them; --engine: whole models on the CPU vs the GPU (graphs on vs off bit for bit)"},
    {"template", cmd_template,
     "(--model M | --template F.jinja | --builtin NAME) --messages CONV.json [--tools T.json] "
     "[--add-generation-prompt] [--enable-thinking | --no-enable-thinking] [--bos TEXT] [--eos TEXT]",
     "render a conversation with a chat template, exactly as transformers would"},
};

static int cmd_help(int argc, char **argv) {
    (void)argc;
    (void)argv;
    printf("llm170 %s: an LLM inference engine for GGUF models\n\nusage: llm170 <command> [args]\n\n",
           LLM170_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        printf("  %-12s %s\n  %-12s   %s\n", commands[i].name, commands[i].what, "", commands[i].usage);
    return 0;
}

static int cmd_version(int argc, char **argv) {
    (void)argc;
    (void)argv;
    printf("llm170 %s\n", LLM170_VERSION);
    return 0;
}

int main(int argc, char **argv) {
#ifdef LLM170_HAVE_CUDA
    cuda_backend_register(); /* "cuda:N" devices for backend_open (the core does not link the CUDA backend) */
#endif
    if (argc < 2) {
        cmd_help(0, NULL);
        return 2;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) name = "help";
    if (!strcmp(name, "--version")) name = "version";
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "llm170: unknown command '%s' (llm170 help lists them)\n", name);
    return 2;
}
