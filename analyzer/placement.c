/* Where each node ran and why (docs/placement.md), from the trace's node_placements table: report's Placement
 * section, the HTML tooltip's data and the Graphviz view of one layer (`export --dot`). A trace without the table
 * (older, or a JSON profile) has placement unknown: nothing is printed, and --dot says so. */
#include "placement.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_rule.h"
#include "output.h"
#include "v3_format.h"

/* Each plan's span of graphs: from its first graph to the next plan of its scheduler. Then each placed node with its
 * op and name, and the op records and copies of the graphs it spans (copies by the tensor copied: a node's result
 * sent to another backend). */
#define PL_WITH                                                                                                  \
    "WITH span AS (SELECT pid, sched_id, graph_id AS g0, LEAD(graph_id) OVER (PARTITION BY pid, sched_id"        \
    " ORDER BY graph_id) AS g1 FROM (SELECT DISTINCT pid, sched_id, graph_id FROM node_placements"               \
    " WHERE graph_id IS NOT NULL)),"                                                                             \
    " np AS (SELECT p.pid, p.sched_id, p.graph_id, p.node_index, p.backend_id, p.preferred_backend_id, p.reason," \
    " COALESCE(n.op, '?') AS op, n.tensor_name AS tensor_name FROM node_placements p"                            \
    " JOIN span s ON s.pid = p.pid AND s.sched_id = p.sched_id AND s.g0 = p.graph_id"                            \
    " LEFT JOIN nodes n ON n.pid = p.pid AND n.node_id = p.node_id),"                                            \
    " ev AS (SELECT e.pid, e.sched_id, s.g0, e.node_index, count(*) AS n, sum(e.duration_ns) AS ns FROM events e" \
    " JOIN span s ON s.pid = e.pid AND s.sched_id = e.sched_id AND e.graph_id >= s.g0"                           \
    " AND (s.g1 IS NULL OR e.graph_id < s.g1) WHERE e.type = 0 GROUP BY 1, 2, 3, 4),"                            \
    " cp AS (SELECT e.pid, e.sched_id, s.g0, n.tensor_name, count(*) AS n, sum(e.bytes) AS bytes FROM events e"  \
    " JOIN nodes n ON n.pid = e.pid AND n.node_id = e.node_id JOIN span s ON s.pid = e.pid"                      \
    " AND s.sched_id = e.sched_id AND e.graph_id >= s.g0 AND (s.g1 IS NULL OR e.graph_id < s.g1)"                \
    " WHERE e.type = 1 GROUP BY 1, 2, 3, 4)"
#define PL_JOIN                                                                                                  \
    " FROM np LEFT JOIN ev ON ev.pid = np.pid AND ev.sched_id = np.sched_id AND ev.g0 = np.graph_id"              \
    " AND ev.node_index = np.node_index LEFT JOIN cp ON cp.pid = np.pid AND cp.sched_id = np.sched_id"           \
    " AND cp.g0 = np.graph_id AND cp.tensor_name = np.tensor_name"                                               \
    " LEFT JOIN backend_list b ON b.pid = np.pid AND b.sched_id = np.sched_id AND b.id = np.backend_id"          \
    " LEFT JOIN backend_list pb ON pb.pid = np.pid AND pb.sched_id = np.sched_id AND pb.id = np.preferred_backend_id"

bool ggprof_placement_present(sqlite3 *db) {
    sqlite3_stmt *st = NULL;
    bool          yes = sqlite3_prepare_v2(db, "SELECT 1 FROM node_placements LIMIT 1", -1, &st, NULL) == SQLITE_OK &&
               sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return yes;
}

static const char *col_text(sqlite3_stmt *st, int i, const char *dflt) {
    const char *s = (const char *) sqlite3_column_text(st, i);
    return s ? s : dflt;
}

static void cell_ms(ggprof_table *t, sqlite3_stmt *st, int i) {
    if (sqlite3_column_type(st, i) == SQLITE_NULL) ggprof_table_null(t);
    else ggprof_table_real(t, (double) sqlite3_column_int64(st, i) / 1e6);
}

static const ggprof_col k_backend_cols[] = {
    { "Backend", "backend", NULL, GGPROF_COL_FLEX }, { "PID", "pid", NULL, 0 },
    { "Plans", "plans", NULL, 0 },                 { "Nodes", "nodes", NULL, 0 },
    { "Fallbacks", "fallbacks", NULL, 0 },         { "Op ms", "op_ms", "%.3f", 0 },
};
static const ggprof_col k_fallback_cols[] = {
    { "Op", "op", NULL, GGPROF_COL_FLEX },  { "Reason", "reason", NULL, 0 },      { "Ran on", "backend", NULL, 0 },
    { "Instead of", "preferred", NULL, 0 }, { "Nodes", "nodes", NULL, 0 },        { "Op ms", "op_ms", "%.3f", 0 },
    { "Copies", "copies", NULL, 0 },        { "Copy MiB", "copy_mib", "%.3f", 0 },
};

int ggprof_placement_tables(sqlite3 *db, ggprof_table *backends, ggprof_table *fallbacks) {
    ggprof_table_init(backends, k_backend_cols, sizeof(k_backend_cols) / sizeof(k_backend_cols[0]));
    ggprof_table_init(fallbacks, k_fallback_cols, sizeof(k_fallback_cols) / sizeof(k_fallback_cols[0]));
    sqlite3_stmt *st = NULL;
    int           rc = 0;
    if (sqlite3_prepare_v2(db, PL_WITH " SELECT ggprof_backend_label(b.name, np.backend_id), np.pid,"
                                       " count(DISTINCT np.graph_id), count(*), sum(np.reason != 'preferred'), sum(ev.ns)"
                                       PL_JOIN " GROUP BY np.pid, np.sched_id, np.backend_id"
                                       " ORDER BY np.pid, np.sched_id, np.backend_id", -1, &st, NULL) != SQLITE_OK) {
        rc = -1;
    }
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        char safe[256];
        ggprof_table_text(backends, ggprof_text_safe(col_text(st, 0, "?"), safe, sizeof(safe)));
        for (int i = 1; i <= 4; i++) ggprof_table_int(backends, sqlite3_column_int64(st, i));
        cell_ms(backends, st, 5);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == 0 && sqlite3_prepare_v2(db, PL_WITH " SELECT np.op, np.reason, ggprof_backend_label(b.name, np.backend_id),"
                                                  " ggprof_backend_label(pb.name, np.preferred_backend_id), count(*),"
                                                  " sum(ev.ns), sum(cp.n), sum(cp.bytes)" PL_JOIN
                                                  " WHERE np.reason != 'preferred' GROUP BY 1, 2, 3, 4"
                                                  " ORDER BY COALESCE(sum(ev.ns), 0) DESC, count(*) DESC, 1, 2",
                                      -1, &st, NULL) != SQLITE_OK) {
        rc = -1;
    }
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        char safe[4][256];
        for (int i = 0; i < 4; i++) ggprof_table_text(fallbacks, ggprof_text_safe(col_text(st, i, "?"), safe[i], sizeof(safe[i])));
        ggprof_table_int(fallbacks, sqlite3_column_int64(st, 4));
        cell_ms(fallbacks, st, 5);
        ggprof_table_int(fallbacks, sqlite3_column_int64(st, 6));
        ggprof_table_real(fallbacks, (double) sqlite3_column_int64(st, 7) / 1048576.0);
    }
    sqlite3_finalize(st);
    if (rc) {
        ggprof_table_free(backends);
        ggprof_table_free(fallbacks);
    }
    return rc;
}

void ggprof_placement_print(FILE *out, sqlite3 *db) {
    if (!ggprof_placement_present(db)) return;
    ggprof_table b, f;
    if (ggprof_placement_tables(db, &b, &f) != 0) {
        fprintf(out, "\nPlacement: cannot be read: %s\n", sqlite3_errmsg(db));
        return;
    }
    fprintf(out, "\nPlacement: where each node ran (per backend, over every plan; op time of the graphs each plan"
                 " covers):\n");
    ggprof_table_write(&b, GGPROF_FMT_TABLE, out, 80);
    if (ggprof_table_rows(&f)) {
        fprintf(out, "Fallbacks: nodes that ran off the scheduler's best device, by op and reason (copies: their"
                     " results sent to another backend):\n");
        ggprof_table_write(&f, GGPROF_FMT_TABLE, out, 80);
    } else {
        fprintf(out, "  every node ran on its scheduler's best backend\n");
    }
    ggprof_table_free(&b);
    ggprof_table_free(&f);
}

/* ---- the HTML tooltip: per plan, the nodes that fell back ---- */

void ggprof_placement_html(FILE *f, sqlite3 *db) {
    if (!ggprof_placement_present(db)) return;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, PL_WITH ", fb AS (SELECT np.pid, np.graph_id, np.node_index, np.reason,"
                                       " COALESCE(b.name, '') AS b, COALESCE(pb.name, '') AS pb" PL_JOIN ")"
                                       " SELECT s.pid, s.g0, COALESCE(s.g1, -1), fb.node_index, fb.reason, fb.b, fb.pb"
                                       " FROM span s LEFT JOIN fb ON fb.pid = s.pid AND fb.graph_id = s.g0"
                                       " AND fb.reason != 'preferred' ORDER BY s.pid, s.g0, fb.node_index",
                           -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return;
    }
    /* [[pid, first graph, next plan's first graph (-1: none), {node index: [reason, ran on, instead of]}], ...] */
    fputs(",\n\"placements\":[", f);
    int64_t pid = -1, g0 = -1;
    int     n_plans = 0, n_nodes = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_int64(st, 0) != pid || sqlite3_column_int64(st, 1) != g0) {
            pid = sqlite3_column_int64(st, 0), g0 = sqlite3_column_int64(st, 1);
            fprintf(f, "%s[%" PRId64 ",%" PRId64 ",%" PRId64 ",{", n_plans++ ? "}],\n" : "", pid, g0,
                    (int64_t) sqlite3_column_int64(st, 2));
            n_nodes = 0;
        }
        if (sqlite3_column_type(st, 3) == SQLITE_NULL) continue;
        fprintf(f, "%s\"%" PRId64 "\":[", n_nodes++ ? "," : "", (int64_t) sqlite3_column_int64(st, 3));
        for (int i = 4; i <= 6; i++) {
            if (i > 4) fputc(',', f);
            ggprof_json_put(f, col_text(st, i, ""), GGPROF_JSON_HTML);
        }
        fputc(']', f);
    }
    fputs(n_plans ? "}]]" : "]", f);
    sqlite3_finalize(st);
}

/* ---- Graphviz: one layer of one graph ---- */

/* A label's text: printable, with the quote and backslash escaped for a DOT string. */
static void dot_text(FILE *f, const char *s) {
    char safe[512];
    for (const char *p = ggprof_text_safe(s ? s : "", safe, sizeof(safe)); *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', f);
        fputc(*p, f);
    }
}

static const char *const k_fill[] = { "#a6cee3", "#fdbf6f", "#b2df8a", "#cab2d6", "#fb9a99", "#ffff99", "#e0e0e0" };

int ggprof_placement_dot(sqlite3 *db, const char *path, int layer, int64_t graph, char *why, size_t why_len) {
    if (!ggprof_placement_present(db)) {
        snprintf(why, why_len, "'%s': the trace has no node placement (recorded by an older ggprof, or a JSON"
                               " profile): nothing to draw", path);
        return -1;
    }
    /* The plan: the one in effect for --graph (its scheduler's latest plan at or before it), else the largest. */
    sqlite3_stmt *st = NULL;
    int64_t       pid = 0, sched = 0, g0 = -1;
    const char   *pick = graph >= 0
                             ? "SELECT p.pid, p.sched_id, max(p.graph_id) FROM node_placements p JOIN graph_list g"
                               " ON g.pid = p.pid AND g.sched_id = p.sched_id AND g.graph_id = ?1 WHERE p.graph_id <= ?1"
                               " GROUP BY p.pid, p.sched_id LIMIT 1"
                             : "SELECT pid, sched_id, graph_id FROM node_placements WHERE graph_id IS NOT NULL"
                               " GROUP BY 1, 2, 3 ORDER BY count(*) DESC, 3 LIMIT 1";
    if (sqlite3_prepare_v2(db, pick, -1, &st, NULL) == SQLITE_OK) {
        if (graph >= 0) sqlite3_bind_int64(st, 1, graph);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 2) != SQLITE_NULL) {
            pid = sqlite3_column_int64(st, 0), sched = sqlite3_column_int64(st, 1), g0 = sqlite3_column_int64(st, 2);
        }
    }
    sqlite3_finalize(st);
    if (g0 < 0) {
        snprintf(why, why_len, "'%s': graph %" PRId64 " has no node placement in the trace", path, graph);
        return -1;
    }
    if (graph < 0) graph = g0;
    st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT p.node_index, COALESCE(n.op, '?'), COALESCE(n.sub_op_name, ''),"
                               " COALESCE(n.tensor_name, ''), COALESCE(n.ne, ''), p.backend_id, COALESCE(b.name, ''),"
                               " p.reason, COALESCE(pb.name, ''), COALESCE(p.src_nodes, '[]'),"
                               " (SELECT sum(e.duration_ns) FROM events e WHERE e.pid = p.pid AND e.graph_id = ?4"
                               " AND e.type = 0 AND e.node_index = p.node_index)"
                               " FROM node_placements p LEFT JOIN nodes n ON n.pid = p.pid AND n.node_id = p.node_id"
                               " LEFT JOIN backend_list b ON b.pid = p.pid AND b.sched_id = p.sched_id AND b.id = p.backend_id"
                               " LEFT JOIN backend_list pb ON pb.pid = p.pid AND pb.sched_id = p.sched_id"
                               " AND pb.id = p.preferred_backend_id"
                               " WHERE p.pid = ?1 AND p.sched_id = ?2 AND p.graph_id = ?3 ORDER BY p.node_index",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(why, why_len, "'%s': cannot read the trace: %s", path, sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int64(st, 1, pid), sqlite3_bind_int64(st, 2, sched), sqlite3_bind_int64(st, 3, g0);
    sqlite3_bind_int64(st, 4, graph);
    /* Which layer: --layer, else the lowest the plan's names carry (none: every node). Nodes first, so that edges name only drawn ones. */
    typedef struct {
        int64_t index;
        char    src[128];
    } drawn;
    drawn  *d = NULL;
    size_t  n = 0, cap = 0;
    FILE   *f = NULL;
    int     rc = -1;
    char   *body = NULL;
    size_t  body_len = 0;
    FILE   *mem = open_memstream(&body, &body_len);
    if (!mem) {
        snprintf(why, why_len, "'%s': out of memory", path);
        goto out;
    }
    if (layer < 0) {
        int low = -1;
        while (sqlite3_step(st) == SQLITE_ROW) {
            int l = ggprof_layer_of(col_text(st, 3, ""));
            if (l >= 0 && (low < 0 || l < low)) low = l;
        }
        sqlite3_reset(st);
        layer = low; /* -1: no name carries a layer: every node */
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (layer >= 0 && ggprof_layer_of(col_text(st, 3, "")) != layer) continue;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 256;
            drawn *v  = realloc(d, nc * sizeof(*v));
            if (!v) break;
            d = v, cap = nc;
        }
        d[n].index = sqlite3_column_int64(st, 0);
        snprintf(d[n].src, sizeof(d[n].src), "%s", col_text(st, 9, "[]"));
        n++;
        int         backend = sqlite3_column_int(st, 5);
        const char *reason  = col_text(st, 7, "");
        bool        off     = strcmp(reason, "preferred") != 0;
        fprintf(mem, "  n%" PRId64 " [fillcolor=\"%s\"%s, label=\"", d[n - 1].index,
                k_fill[(unsigned) backend % (sizeof(k_fill) / sizeof(k_fill[0]))],
                off ? ", color=\"#d62728\", penwidth=3" : "");
        fprintf(mem, "#%" PRId64 " ", d[n - 1].index);
        dot_text(mem, col_text(st, 1, "?"));
        if (*col_text(st, 2, "")) fputc('/', mem), dot_text(mem, col_text(st, 2, ""));
        fputs("\\n", mem), dot_text(mem, col_text(st, 3, "")), fputs("\\n", mem), dot_text(mem, col_text(st, 4, ""));
        fputs("\\n", mem), dot_text(mem, col_text(st, 6, "?"));
        if (sqlite3_column_type(st, 10) != SQLITE_NULL) {
            fprintf(mem, "  %.3f ms", (double) sqlite3_column_int64(st, 10) / 1e6);
        }
        if (off) fputs("\\nfallback: ", mem), dot_text(mem, reason), fputs(" (not ", mem), dot_text(mem, col_text(st, 8, "?")), fputc(')', mem);
        fputs("\"];\n", mem);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (n == 0) {
        snprintf(why, why_len, "'%s': no node of layer %d in graph %" PRId64, path, layer, graph);
        goto out;
    }
    /* Edges from each drawn node's sources that are drawn too. */
    for (size_t i = 0; i < n; i++) {
        for (const char *p = d[i].src; *p;) {
            char   *end;
            int64_t s = strtoll(p, &end, 10);
            if (end == p) {
                p++;
                continue;
            }
            p = end;
            for (size_t k = 0; k < n; k++) {
                if (d[k].index == s) fprintf(mem, "  n%" PRId64 " -> n%" PRId64 ";\n", s, d[i].index);
            }
        }
    }
    if (fclose(mem) != 0) {
        mem = NULL;
        snprintf(why, why_len, "'%s': out of memory", path);
        goto out;
    }
    mem = NULL;
    if (!(f = fopen(path, "w"))) {
        snprintf(why, why_len, "'%s': cannot write it", path);
        goto out;
    }
    char what[32] = "every node";
    if (layer >= 0) snprintf(what, sizeof(what), "layer %d", layer);
    fprintf(f, "digraph ggprof {\n  label=\"graph %" PRId64 ", %s: nodes by backend; fallbacks outlined red\";\n"
               "  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"monospace\", fontsize=10];\n",
            graph, what);
    fwrite(body, 1, body_len, f);
    fputs("}\n", f);
    rc = fclose(f) == 0 ? 0 : -1;
    if (rc) snprintf(why, why_len, "'%s': cannot write it", path);
out:
    if (mem) fclose(mem);
    sqlite3_finalize(st);
    free(body);
    free(d);
    return rc;
}
