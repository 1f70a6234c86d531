/* ggprof memory: where every byte of host and device memory went, per process, backend and kind; the tensors alive
 * at each compute buffer's peak; weights and KV cache per layer; what was held over time. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer_commands.h"
#include "cli.h"
#include "memory.h"
#include "output.h"
#include "trace.h"
#include "v3_format.h"

const char ggprof_usage_memory[] =
    "usage: ggprof memory TRACE " GGPROF_HELP_SYNOPSIS "\n"
    "\n"
    "Memory the recorded program held in ggml's backend buffers: per process and backend (buffer type), the\n"
    "weights, KV cache, compute buffers and other buffers held at the process's peak, and the most each\n"
    "backend held; then each compute buffer's peak (the node where the tensors ggml-alloc planned into it reach\n"
    "furthest) and the devices' free memory. Sizes are MiB (1,048,576 bytes) in the table, bytes in CSV and JSON.\n"
    "One of --peak, --layers and --timeline at most:\n"
    GGPROF_HELP_OPTIONS
    "TRACE is a database written by 'ggprof record' (1.x traces before memory was recorded have none).\n"
    "The kinds and the peak rule: docs/memory.md.\n";

#define NCOL(c) (sizeof(c) / sizeof((c)[0]))

static const ggprof_col k_peak_cols[] = {
    { "buffer", "buffer", NULL, 0 },
    { "layer", "layer", NULL, 0 },
    { "op", "op", NULL, 0 },
    { "tensor", "tensor", NULL, GGPROF_COL_FLEX },
    { "MiB", "mib", "%.3f", 0 },
    { "pid", "pid", NULL, GGPROF_COL_NO_TABLE },
    { "buffer_id", "buffer_id", NULL, GGPROF_COL_NO_TABLE },
    { "plan", "plan", NULL, GGPROF_COL_NO_TABLE },
    { "node_index", "node_index", NULL, GGPROF_COL_NO_TABLE },
    { "shape", "shape", NULL, GGPROF_COL_NO_TABLE },
    { "bytes", "bytes", NULL, GGPROF_COL_NO_TABLE },
    { "offset", "offset", NULL, GGPROF_COL_NO_TABLE },
};

static const ggprof_col k_layer_cols[] = {
    { "pid", "pid", NULL, 0 },
    { "backend", "backend", NULL, GGPROF_COL_FLEX },
    { "kind", "kind", NULL, 0 },
    { "layer", "layer", NULL, 0 },
    { "type", "type", NULL, 0 },
    { "tensors", "tensors", NULL, 0 },
    { "MiB", "mib", "%.3f", 0 },
    { "bytes", "bytes", NULL, GGPROF_COL_NO_TABLE },
};

static const ggprof_col k_time_cols[] = {
    { "t s", "t_s", "%.6f", 0 },
    { "pid", "pid", NULL, 0 },
    { "backend", "backend", NULL, GGPROF_COL_FLEX },
    { "kind", "kind", NULL, 0 },
    { "MiB", "mib", "%+.2f", 0 },
    { "backend MiB", "backend_held_mib", "%.2f", 0 },
    { "process MiB", "process_held_mib", "%.2f", 0 },
    { "bytes", "bytes", NULL, GGPROF_COL_NO_TABLE },
    { "buffer_id", "buffer_id", NULL, GGPROF_COL_NO_TABLE },
    { "backend_held_bytes", "backend_held_bytes", NULL, GGPROF_COL_NO_TABLE },
    { "process_held_bytes", "process_held_bytes", NULL, GGPROF_COL_NO_TABLE },
};

static void layer_cell(ggprof_table *t, int32_t layer) {
    if (layer < 0) {
        ggprof_table_null(t);
    } else {
        ggprof_table_int(t, layer);
    }
}

static void fill_peaks(ggprof_table *t, const ggprof_mem *m) {
    for (size_t i = 0; i < m->n_peaks; i++) {
        const ggprof_mpeak *p = &m->peaks[i];
        for (size_t j = 0; j < p->n_live; j++) {
            const ggprof_mlive *l = &p->live[j];
            ggprof_table_text(t, p->buf->name);
            layer_cell(t, l->layer);
            ggprof_table_text(t, l->op);
            ggprof_table_text(t, l->tensor[0] ? l->tensor : NULL);
            ggprof_table_real(t, GGPROF_MIB(l->size));
            ggprof_table_int(t, p->buf->pid);
            ggprof_table_int(t, p->buf->id);
            ggprof_table_int(t, p->plan_id);
            ggprof_table_int(t, l->node_index);
            ggprof_table_text(t, l->ne);
            ggprof_table_int(t, l->size);
            ggprof_table_int(t, l->offset);
        }
    }
}

static void fill_layers(ggprof_table *t, const ggprof_mem *m) {
    for (size_t i = 0; i < m->n_layers; i++) {
        const ggprof_mlayer *l = &m->layers[i];
        ggprof_table_int(t, l->pid);
        ggprof_table_text(t, l->backend);
        ggprof_table_text(t, ggprof_mem_kind_names[l->kind]);
        layer_cell(t, l->layer);
        ggprof_table_text(t, l->type);
        ggprof_table_int(t, l->n);
        ggprof_table_real(t, GGPROF_MIB(l->bytes));
        ggprof_table_int(t, l->bytes);
    }
}

static void fill_timeline(ggprof_table *t, const ggprof_mem *m) {
    for (size_t i = 0; i < m->n_events; i++) {
        const ggprof_mevent *e = &m->events[i];
        ggprof_table_real(t, (double) (e->t_ns - m->t0) / 1e9);
        ggprof_table_int(t, e->buf->pid);
        ggprof_table_text(t, e->buf->name);
        ggprof_table_text(t, ggprof_mem_kind_names[e->buf->kind]);
        ggprof_table_real(t, GGPROF_MIB(e->delta));
        ggprof_table_real(t, GGPROF_MIB(e->held_backend));
        ggprof_table_real(t, GGPROF_MIB(e->held_process));
        ggprof_table_int(t, e->delta);
        ggprof_table_int(t, e->buf->id);
        ggprof_table_int(t, e->held_backend);
        ggprof_table_int(t, e->held_process);
    }
}

int ggprof_cmd_memory(int argc, char **argv) {
    const char *trace = NULL, *format = "table";
    int peak = 0, layers = 0, timeline = 0;
    const ggprof_opt opts[] = {
        { "--peak", NULL, GGPROF_OPT_FLAG, &peak, NULL, NULL,
          "the tensors alive at each compute buffer's peak, by layer and op (views counted once)" },
        { "--layers", NULL, GGPROF_OPT_FLAG, &layers, NULL, NULL,
          "weights and KV cache per layer and type, from the tensors the graphs read and write" },
        { "--timeline", NULL, GGPROF_OPT_FLAG, &timeline, NULL, NULL,
          "every allocation and free, with what the backend and the process hold after it" },
        { "--format", NULL, GGPROF_OPT_STRING, &format, NULL, "table|csv|json",
          "table (default; fits 80 columns), csv or json (an array of objects)" },
    };
    ggprof_args a = { opts, (int) NCOL(opts), &trace, 1, 0, "one trace at a time ('%s' is a second)", 0, 0, NULL };
    int bad = ggprof_parse_args(argc, argv, &a);
    if (bad) return bad;
    if (!trace) return ggprof_fail(GGPROF_EXIT_USAGE, "no trace given; usage: ggprof memory TRACE [--peak|--layers|--timeline]");
    if (peak + layers + timeline > 1) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "--peak, --layers and --timeline are separate views; give one of them");
    }
    ggprof_format fmt;
    if (ggprof_format_parse(format, &fmt) != 0) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "unknown format '%s'; expected table, csv or json", format);
    }
    if (ggprof_trace_kind_of(trace) == GGPROF_TRACE_JSON) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "'%s' is a JSON profile, which holds no memory; give the database 'ggprof record' wrote",
                           trace);
    }
    sqlite3 *db;
    char     why[512];
    int      rc = ggprof_trace_open(trace, &db, why, sizeof(why));
    if (rc) return ggprof_fail(rc, "%s", why);
    ggprof_mem m;
    if (ggprof_mem_load(db, &m, why, sizeof(why)) != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "'%s': %s", trace, why);
        sqlite3_close(db);
        return rc;
    }
    sqlite3_close(db);
    if (!m.present) {
        if (fmt == GGPROF_FMT_TABLE) {
            printf("No memory recorded in '%s' (a trace of ggprof before memory was recorded, a JSON import, or a program\n"
                   "that allocated no ggml backend buffer).\n", trace);
        } else {
            printf(fmt == GGPROF_FMT_JSON ? "[]\n" : "\n");
        }
        ggprof_mem_free(&m);
        return 0;
    }
    ggprof_table t;
    if (peak) {
        ggprof_table_init(&t, k_peak_cols, NCOL(k_peak_cols));
        fill_peaks(&t, &m);
    } else if (layers) {
        ggprof_table_init(&t, k_layer_cols, NCOL(k_layer_cols));
        fill_layers(&t, &m);
    } else if (timeline) {
        ggprof_table_init(&t, k_time_cols, NCOL(k_time_cols));
        fill_timeline(&t, &m);
    } else {
        ggprof_mem_backends_table(&t, &m);
    }
    if (fmt == GGPROF_FMT_TABLE && !peak && !layers && !timeline) {
        printf("Memory held in ggml's backend buffers at each process's peak, MiB:\n");
    }
    if (ggprof_table_write(&t, fmt, stdout, 80) != 0) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "writing the table failed");
    if (fmt == GGPROF_FMT_TABLE && rc == 0) {
        if (peak) {
            for (size_t i = 0; i < m.n_peaks; i++) {
                const ggprof_mpeak *p = &m.peaks[i];
                char safe[160];
                printf("%s (buffer %" PRId64 "): %zu tensors, %.3f MiB at node %d; buffer %.3f MiB\n",
                       ggprof_text_safe(p->buf->name, safe, sizeof(safe)),
                       p->buf->id, p->n_live, GGPROF_MIB(p->live_bytes), p->step, GGPROF_MIB(p->buf->size));
            }
        } else if (!layers && !timeline) {
            ggprof_mem_print_summary(stdout, &m, "");
        }
    }
    ggprof_table_free(&t);
    ggprof_mem_free(&m);
    if (fflush(stdout) != 0 || ferror(stdout)) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "writing to stdout failed");
    return rc;
}
