#include <stdio.h>

#include "cli/cli.h"

/* placeholder: being written */
int cmd_quant_bench(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "not built yet\n");
    return 1;
}
