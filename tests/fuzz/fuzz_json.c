/* libFuzzer target: the version-3 JSON reader (`ggprof report trace.json` and friends) on any bytes, then the
 * per-op statistics every analysis command starts from. Nothing may crash, hang or leak. Every record is read by
 * both the fast and the general reader (GGPROF_JSON_CHECK=1): where they differ, the target aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json_v3.h"
#include "trace.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void) argc;
    (void) argv;
    setenv("GGPROF_JSON_CHECK", "1", 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = memfd_create("ggprof-fuzz", MFD_CLOEXEC);
    if (fd < 0) return 0;
    if (write(fd, data, size) == (ssize_t) size) {
        char path[64], why[512];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        sqlite3 *db = ggprof_json_v3_import(path, why, sizeof(why));
        if (!db && strstr(why, "readers differ")) {
            fprintf(stderr, "fuzz_json: %s\n", why);
            abort();
        }
        if (db) {
            ggprof_op_stats s;
            if (ggprof_op_stats_load(db, &s) == 0) ggprof_op_stats_free(&s);
            sqlite3_close(db);
        }
    }
    close(fd);
    return 0;
}
