/* Roll-up views by layer, block and phase: TEMP views on every opened trace, so old and imported traces get them. */
#include "views.h"

#include "layer_rule.h"
#include "model.h"
#include "model_vtab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
 * op_layers gives each record its layer (rules in layer_rule.c and docs/rollups-and-diff.md), computed in C in one
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
    /* Tokens in a graph's batch, its phase and its time per token: model.c, through model_vtab.c. */
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
    if (rc == SQLITE_OK) rc = ggprof_labels_register(db);
    if (rc == SQLITE_OK) rc = ggprof_model_register(db);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, k_views, NULL, NULL, NULL);
    return rc;
}
