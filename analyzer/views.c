/* Roll-up views by layer, block and phase: TEMP views on every opened trace, so old and imported traces get them. */
#include "views.h"

#include "layers.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The part of a tensor name that says what it is: the scheduler names its copies "BACKEND#name#N", and
 * ggml appends " (view)", " (permuted)", " (reshaped)", ... to the name of what a view derives from. */
static size_t base_name(const char *name, const char **start) {
    const char *s = name, *hash = strchr(name, '#');
    if (hash && strchr(hash + 1, '#')) s = hash + 1;
    const char *e = s + strlen(s);
    const char *h2 = memchr(s, '#', (size_t) (e - s));
    if (h2) e = h2;
    while (e > s && e[-1] == ')') {
        const char *p = e - 1;
        while (p > s && *p != '(') p--;
        if (p <= s || p[-1] != ' ') break;
        e = p - 1;
    }
    *start = s;
    return (size_t) (e - s);
}

static int digits_value(const char *p, const char *e) {
    if (p >= e || e - p > 6) return -1;
    int v = 0;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9') return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

int ggprof_layer_of(const char *name) {
    if (!name || !*name) return -1;
    /* GGUF weights: "blk.3.attn_q.weight" (and the views and copies made of them). */
    const char *blk = strstr(name, "blk.");
    if (blk && (blk == name || blk[-1] == '#' || blk[-1] == ' ')) {
        const char *d = blk + 4, *e = d;
        while (*e >= '0' && *e <= '9') e++;
        if (*e == '.') {
            int v = digits_value(d, e);
            if (v >= 0) return v;
        }
    }
    const char *s;
    size_t n = base_name(name, &s);
    const char *e = s + n, *d = e;
    while (d > s && d[-1] >= '0' && d[-1] <= '9') d--;
    if (d == e) return -1;
    /* llama.cpp's graph callback names a layer's tensors "name-IL" (cb(cur, "Qcur", il)). */
    if (d - s >= 2 && d[-1] == '-') return digits_value(d, e);
    /* Its KV cache is "cache_k_l3" / "cache_v_l3"; a SET_ROWS into it writes "cache_k_l3 (view)". */
    if (n > 6 && strncmp(s, "cache_", 6) == 0 && d - s >= 8 && d[-1] == 'l' && d[-2] == '_') return digits_value(d, e);
    return -1;
}

static int starts(const char *s, size_t n, const char *prefix) {
    size_t p = strlen(prefix);
    return n >= p && strncmp(s, prefix, p) == 0;
}

static int contains(const char *s, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++) {
        if (strncmp(s + i, needle, k) == 0) return 1;
    }
    return 0;
}

static int is_op(const char *op, const char *const *list) {
    for (; op && *list; list++) {
        if (strcmp(op, *list) == 0) return 1;
    }
    return 0;
}

/* Order matters: MoE before norm (ffn_moe_weights_norm), norm before output (result_norm), and names before
 * ops only where the name is more specific (a SOFT_MAX named ffn_moe_probs is MoE routing, not attention). */
const char *ggprof_block_of(int type, const char *op, const char *tensor_name) {
    if (type == 1) return "copy";
    if (type == 2) return "sync";
    static const char *const norm_ops[] = { "RMS_NORM", "NORM", "GROUP_NORM", "L2_NORM", NULL };
    static const char *const attn_ops[] = { "FLASH_ATTN_EXT", "SOFT_MAX", "ROPE", NULL };
    static const char *const attn_names[] = { "Qcur", "Kcur", "Vcur", "kq", "attn_", "cache_k", "cache_v",
                                              "q_", "k_", "v_", "kv_", "wo", NULL };
    const char *s = "";
    size_t n = tensor_name ? base_name(tensor_name, &s) : 0;
    if ((op && strcmp(op, "MUL_MAT_ID") == 0) || starts(s, n, "ffn_moe") || contains(s, n, "_exps") ||
        contains(s, n, "_shexp")) {
        return "moe";
    }
    if (is_op(op, norm_ops) || contains(s, n, "norm")) return "norm";
    if (starts(s, n, "result_") || (n == 6 && strncmp(s, "output", 6) == 0) || starts(s, n, "output.")) return "output";
    if (starts(s, n, "inp_") || (n == 4 && strncmp(s, "embd", 4) == 0) || starts(s, n, "token_embd")) return "input";
    if (is_op(op, attn_ops)) return "attention";
    for (const char *const *p = attn_names; *p; p++) {
        if (starts(s, n, *p)) return "attention";
    }
    /* A single letter q, k or v, possibly with a layer: "q-3". */
    if ((n == 1 || (n > 2 && s[1] == '-')) && (s[0] == 'q' || s[0] == 'k' || s[0] == 'v')) return "attention";
    if (starts(s, n, "ffn_") || contains(s, n, ".ffn_")) return "ffn";
    if (contains(s, n, ".attn_")) return "attention";
    return "other";
}

static void fn_layer(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void) argc;
    int l = ggprof_layer_of((const char *) sqlite3_value_text(argv[0]));
    if (l < 0) {
        sqlite3_result_null(ctx);
    } else {
        sqlite3_result_int(ctx, l);
    }
}

static void fn_block(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void) argc;
    sqlite3_result_text(ctx,
                        ggprof_block_of(sqlite3_value_int(argv[0]), (const char *) sqlite3_value_text(argv[1]),
                                        (const char *) sqlite3_value_text(argv[2])),
                        -1, SQLITE_STATIC);
}

/* Documented in docs/queries.md; keep the columns in that order and add new ones at the end.
 *
 * op_layers gives each record its layer (rules in layers.c and docs/rollups-and-diff.md), computed in C in one
 * pass by the virtual table ggprof_op_layer in the records' order (by process, graph, time); the rest of each row
 * is joined back by row id (CROSS JOIN keeps the virtual table the outer loop). graph_phase reads
 * ggprof_graph_phase, the same pass's graphs, materialized so that joins on it get an index. */
static const char k_views[] =
    "CREATE TEMP VIEW IF NOT EXISTS op_layers AS\n"
"SELECT w.layer AS layer, ggprof_block(e.type, e.name, n.tensor_name) AS block, e.type AS type,\n"
    "  e.name AS name, NULLIF(n.tensor_name, '') AS tensor_name, b.name AS backend, e.duration_ns AS duration_ns,\n"
    "  e.graph_id AS graph_id, e.node_index AS node_index, e.pid AS pid, e.backend_id AS backend_id,\n"
    "  e.sched_id AS sched_id, e.split_id AS split_id, e.start_ns AS start_ns, e.bytes AS bytes,\n"
    "  COALESCE(n.ne, '[0, 0, 0, 0]') AS ne, COALESCE(n.ne_src, '[]') AS ne_src, COALESCE(n.type_src, '[]') AS type_src,\n"
    "  n.sub_op_name AS sub_op_name, w.seq AS seq, COALESCE(n.sub_op, -1) AS sub_op, e.node_id AS node_id\n"
    "  FROM ggprof_op_layer w CROSS JOIN main.events e ON e.rowid = w.seq LEFT JOIN main.nodes n ON n.pid = e.pid AND n.node_id = e.node_id\n"
    "  LEFT JOIN main.backend_list b ON b.pid = e.pid AND b.sched_id = e.sched_id AND b.id = e.backend_id;\n"
    "\n"
    /* Percentages are of the OP time of the whole trace, for SYNC and COPY too: "the barrier adds 7%". */
    "CREATE TEMP VIEW IF NOT EXISTS layer_time AS\n"
    "SELECT layer, sum(type = 0) AS ops, sum(CASE WHEN type = 0 THEN duration_ns ELSE 0 END) AS op_ns,\n"
    "  100.0 * sum(CASE WHEN type = 0 THEN duration_ns ELSE 0 END)\n"
    "    / NULLIF(sum(sum(CASE WHEN type = 0 THEN duration_ns ELSE 0 END)) OVER (), 0) AS op_pct,\n"
    "  sum(CASE WHEN type = 2 THEN duration_ns ELSE 0 END) AS sync_ns,\n"
    "  sum(CASE WHEN type = 1 THEN duration_ns ELSE 0 END) AS copy_ns\n"
    "  FROM op_layers GROUP BY layer ORDER BY layer IS NULL, layer;\n"
    "\n"
    "CREATE TEMP VIEW IF NOT EXISTS layer_op_time AS\n"
    "SELECT layer, name, type, count(*) AS count, sum(duration_ns) AS time_ns,\n"
    "  100.0 * sum(duration_ns) / NULLIF(sum(sum(CASE WHEN type = 0 THEN duration_ns ELSE 0 END)) OVER (), 0) AS op_pct\n"
    "  FROM op_layers GROUP BY layer, type, name ORDER BY layer IS NULL, layer, type, time_ns DESC, name;\n"
    "\n"
    "CREATE TEMP VIEW IF NOT EXISTS block_time AS\n"
    "SELECT block, count(*) AS count, sum(duration_ns) AS time_ns,\n"
    "  100.0 * sum(duration_ns) / NULLIF(sum(sum(CASE WHEN type = 0 THEN duration_ns ELSE 0 END)) OVER (), 0) AS op_pct,\n"
    "  count(DISTINCT layer) AS layers\n"
    "  FROM op_layers GROUP BY block ORDER BY min(type), time_ns DESC, block;\n"
    "\n"
    "CREATE TEMP VIEW IF NOT EXISTS block_op_time AS\n"
    "SELECT block, name, count(*) AS count, sum(duration_ns) AS time_ns,\n"
    "  100.0 * sum(duration_ns) / NULLIF(sum(sum(CASE WHEN type = 0 THEN duration_ns ELSE 0 END)) OVER (), 0) AS op_pct\n"
    "  FROM op_layers GROUP BY block, name\n"
    "  ORDER BY min(type), sum(sum(duration_ns)) OVER (PARTITION BY block) DESC, block, time_ns DESC, name;\n"
    "\n"
    /* Tokens in a graph's batch, its phase and its time per token: layers.c. */
    "CREATE TEMP VIEW IF NOT EXISTS graph_phase AS\n"
    "WITH g AS MATERIALIZED (SELECT * FROM ggprof_graph_phase)\n"
    "SELECT graph_id, pid, n_tokens, phase, duration_ns, ns_per_token, sched_id, start_ns, op_ns, sync_ns, copy_ns\n"
    "  FROM g;\n"
    "\n"
    "CREATE TEMP VIEW IF NOT EXISTS phase_time AS\n"
    "SELECT phase, count(*) AS graphs, sum(n_tokens) AS tokens, sum(duration_ns) AS duration_ns,\n"
    "  CAST(sum(duration_ns) AS REAL) / sum(n_tokens) AS ns_per_token, sum(op_ns) AS op_ns,\n"
    "  sum(sync_ns) AS sync_ns, sum(copy_ns) AS copy_ns\n"
    "  FROM graph_phase GROUP BY phase\n"
    "  ORDER BY CASE phase WHEN 'prompt' THEN 0 WHEN 'generation' THEN 1 ELSE 2 END;\n";

int ggprof_views_create(sqlite3 *db) {
    int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
    int rc = sqlite3_create_function(db, "ggprof_layer", 1, flags, NULL, fn_layer, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_create_function(db, "ggprof_block", 3, flags, NULL, fn_block, NULL, NULL);
    if (rc == SQLITE_OK) rc = ggprof_layers_register(db);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, k_views, NULL, NULL, NULL);
    return rc;
}
