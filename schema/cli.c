/* Error reporting and output checks shared by the subcommands. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

const char *ggprof_cmd_name = "ggprof";

static void vreport(const char *fmt, va_list ap) {
    fprintf(stderr, "ggprof: %s: ", ggprof_cmd_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void ggprof_err(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
}

int ggprof_fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    return code;
}

int ggprof_is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

int ggprof_close_output(FILE *f, const char *path) {
    int bad = ferror(f);
    int e   = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e   = errno;
    }
    if (bad) {
        ggprof_err("cannot write '%s': %s", path, strerror(e));
        return -1;
    }
    return 0;
}
