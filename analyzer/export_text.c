/* The upstream profiler's text report: overall summary, per-backend summary, operations table. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "export.h"
#include "outfile.h"
#include "trace.h"

int ggprof_export_text(sqlite3 *db, const char *path, char *why, size_t why_len) {
    ggprof_op_stats s;
    if (ggprof_op_stats_load(db, &s) != 0) {
        snprintf(why, why_len, "cannot read the trace: %s", sqlite3_errmsg(db));
        return -1;
    }
    ggprof_outfile of; /* a new private file, renamed over path when whole (outfile.h) */
    FILE *fp = ggprof_outfile_open(&of, path);
    if (!fp) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno));
        ggprof_op_stats_free(&s);
        return -1;
    }
    ggprof_write_text_report(fp, &s);
    ggprof_op_stats_free(&s);
    if (ggprof_outfile_close(&of, fp, 0) != 0) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
        return -1;
    }
    return 0;
}
