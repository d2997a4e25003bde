#include <stdio.h>

#include "cli/cli.h"

/* placeholder: being written */
int cmd_gguf_dump(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "not built yet\n");
    return 1;
}
