/* model_name: see model_name.h. */
#include "cli/model_name.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char FETCHER[] = "scripts/get-model.sh";

/* The fetcher's path next to this binary (see the header), in buf; false if there is none. */
static bool find_fetcher(char *buf, size_t cap) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return false;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return false;
    *slash = 0; /* exe is now the binary's folder */
    static const char *const up[] = {"/..", "/../..", ""};
    for (size_t i = 0; i < sizeof up / sizeof up[0]; i++) {
        if (snprintf(buf, cap, "%s%s/%s", exe, up[i], FETCHER) >= (int)cap) continue;
        if (access(buf, X_OK) == 0) return true;
    }
    return false;
}

static bool is_short_name(const char *arg) {
    size_t n = strlen(arg);
    return n > 0 && !strchr(arg, '/') && !(n >= 5 && !strcmp(arg + n - 5, ".gguf"));
}

/* Runs the fetcher with one argument; its stderr passes through, its stdout's last line goes to out.
 * Returns the exit status (or -1 if it could not run). */
static int run_fetcher(const char *fetcher, const char *arg, char *out, size_t cap) {
    int fd[2];
    if (pipe(fd)) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        execl(fetcher, fetcher, arg, (char *)NULL);
        fprintf(stderr, "cannot run %s: %s\n", fetcher, strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char line[PATH_MAX + 64];
    out[0] = 0;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        size_t k = strlen(line);
        if (k > 0 && k < cap) memcpy(out, line, k + 1);
    }
    if (f) fclose(f);
    else close(fd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int model_name_resolve(const char *cmd, const char *arg, char **path) {
    struct stat st;
    char fetcher[PATH_MAX], out[PATH_MAX];
    *path = NULL;
    if (stat(arg, &st) == 0 || !is_short_name(arg)) {
        *path = strdup(arg);
    } else if (!find_fetcher(fetcher, sizeof fetcher)) {
        fprintf(stderr,
                "llm170 %s: '%s' is not a file; a short model name is fetched by %s of the llm170 source tree, "
                "which is not beside this binary. Pass the path of a .gguf file, or run `%s %s` in the source "
                "tree and pass the path it prints.\n",
                cmd, arg, FETCHER, FETCHER, arg);
        return 1;
    } else {
        int rc = run_fetcher(fetcher, arg, out, sizeof out);
        if (rc != 0 || !out[0]) {
            fprintf(stderr, "llm170 %s: could not get model '%s' (%s exited with %d; its message is above)\n", cmd,
                    arg, fetcher, rc);
            return 1;
        }
        *path = strdup(out);
    }
    if (!*path) {
        fprintf(stderr, "llm170 %s: out of memory\n", cmd);
        return 1;
    }
    return 0;
}

int model_name_list(const char *cmd) {
    char fetcher[PATH_MAX];
    if (!find_fetcher(fetcher, sizeof fetcher)) {
        fprintf(stderr, "llm170 %s: the model list is kept by %s of the llm170 source tree, which is not beside "
                        "this binary\n", cmd, FETCHER);
        return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl(fetcher, fetcher, "--list", (char *)NULL);
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) < 0) return 1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
