/* Trace database DDL (version GGPROF_DB_VERSION) and the version check every reader makes. */
#include "trace_db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Tables hold what the engine sent, in compact form; views are the contract for users and scripts. Views
 * keep their documented columns first and in order; new columns only ever go after them. */
static const char k_ddl[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);\n"
    "CREATE TABLE processes(pid INTEGER PRIMARY KEY, ppid INTEGER, exe TEXT, ggml_version TEXT,\n"
    "  ggml_commit TEXT, ggml_lib TEXT, start_ns INTEGER);\n"
    "CREATE TABLE ggml_types(pid INTEGER, type INTEGER, name TEXT, type_size INTEGER, blck_size INTEGER,\n"
    "  PRIMARY KEY(pid, type));\n"
    "CREATE TABLE backend_list(pid INTEGER, sched_id INTEGER, id INTEGER, name TEXT, device TEXT,\n"
    "  device_type INTEGER, is_host INTEGER, description TEXT, PRIMARY KEY(pid, sched_id, id));\n"
    "CREATE TABLE nodes(pid INTEGER, node_id INTEGER, op TEXT, sub_op INTEGER, sub_op_name TEXT,\n"
    "  tensor_name TEXT, out_type INTEGER, ne TEXT, n_src INTEGER, ne_src TEXT, nb_src TEXT, type_src TEXT,\n"
    "  op_params TEXT, nbytes INTEGER, op_id INTEGER, PRIMARY KEY(pid, node_id));\n"
    "CREATE TABLE graph_list(pid INTEGER, graph_id INTEGER, sched_id INTEGER, start_ns INTEGER,\n"
    "  duration_ns INTEGER, n_nodes INTEGER, n_splits INTEGER, batch_id INTEGER);\n"
    "CREATE TABLE batches(pid INTEGER, tid INTEGER, batch_id INTEGER, api TEXT, status INTEGER, start_ns INTEGER,\n"
    "  duration_ns INTEGER, n_tokens INTEGER, n_seqs INTEGER, n_outputs INTEGER);\n"
    "CREATE TABLE batch_seqs(pid INTEGER, batch_id INTEGER, seq_id INTEGER, n_tokens INTEGER, pos_min INTEGER,\n"
    "  pos_max INTEGER, n_outputs INTEGER);\n"
    "CREATE TABLE split_list(pid INTEGER, graph_id INTEGER, split_id INTEGER, backend_id INTEGER,\n"
    "  sched_id INTEGER, start_ns INTEGER, duration_ns INTEGER, n_nodes INTEGER, node_start INTEGER,\n"
    "  ticks_matched INTEGER, n_ticks INTEGER, n_expected INTEGER, engine_ns INTEGER);\n"
    "CREATE TABLE events(pid INTEGER, tid INTEGER, type INTEGER, name TEXT, timing INTEGER,\n"
    "  backend_id INTEGER, sched_id INTEGER, graph_id INTEGER, split_id INTEGER, node_index INTEGER,\n"
    "  node_id INTEGER, fused_index INTEGER, fused_node_id INTEGER, start_ns INTEGER, duration_ns INTEGER,\n"
    "  bytes INTEGER, wait_ns INTEGER, extra TEXT);\n"
    "CREATE TABLE notes(pid INTEGER, text TEXT);\n"
    /* Optional for readers (older traces lack it): records the ring had no room for; graph_id NULL: not named. */
    "CREATE TABLE losses(pid INTEGER, graph_id INTEGER, records INTEGER);\n"
    /* The whole run (docs/trace-database.md): measured by record, the workload's parent, not by the engine. */
    "CREATE TABLE processes_time(pid INTEGER, ppid INTEGER, how TEXT, fork_ns INTEGER, exit_ns INTEGER,\n"
    "  exit_status INTEGER, utime_ns INTEGER, stime_ns INTEGER, minflt INTEGER, majflt INTEGER, nvcsw INTEGER,\n"
    "  nivcsw INTEGER, maxrss_kib INTEGER, cpus_allowed TEXT, n_cpus_allowed INTEGER, cpu_quota REAL,\n"
    "  n_threads INTEGER);\n"
    "CREATE TABLE thread_idle(pid INTEGER, tid INTEGER, start_ns INTEGER, end_ns INTEGER);\n"
    "CREATE TABLE thread_stats(pid INTEGER, tid INTEGER, name TEXT, first_ns INTEGER, last_ns INTEGER,\n"
    "  cpu_ns INTEGER, runq_ns INTEGER, timeslices INTEGER, idle_ns INTEGER);\n"
    GGPROF_DB_WINDOWS_DDL
    GGPROF_DB_REPLAY_DDL
    "CREATE TABLE regions(pid INTEGER, tid INTEGER, name TEXT, depth INTEGER, start_ns INTEGER,\n"
    "  duration_ns INTEGER);\n"
    "CREATE TABLE kernel_list(pid INTEGER, tid INTEGER, api INTEGER, device INTEGER, name TEXT,\n"
    "  start_ns INTEGER, duration_ns INTEGER, stream INTEGER, correlation INTEGER, graph_node INTEGER,\n"
    "  graph_id INTEGER, sched_id INTEGER, split_id INTEGER, backend_id INTEGER, node_index INTEGER,\n"
    "  node_id INTEGER);\n"
    /* Memory (docs/memory.md): a buffer's kind is told in one place, the buffers view. */
    "CREATE TABLE buffer_list(pid INTEGER, buffer_id INTEGER, handle INTEGER, buft TEXT, device TEXT,\n"
    "  is_host INTEGER, source INTEGER, usage INTEGER, size INTEGER, alignment INTEGER, alloc_ns INTEGER,\n"
    "  free_ns INTEGER, PRIMARY KEY(pid, buffer_id));\n"
    "CREATE TABLE device_memory(pid INTEGER, device TEXT, dev_type INTEGER, moment TEXT, t_ns INTEGER,\n"
    "  free INTEGER, total INTEGER);\n"
    "CREATE TABLE plan_list(pid INTEGER, plan_id INTEGER, sched_id INTEGER, t_ns INTEGER, n_nodes INTEGER,\n"
    "  n_tensors INTEGER, PRIMARY KEY(pid, plan_id));\n"
    "CREATE TABLE placements(pid INTEGER, plan_id INTEGER, idx INTEGER, node_id INTEGER, node_index INTEGER,\n"
    "  first INTEGER, last INTEGER, root INTEGER, flags INTEGER, handle INTEGER, buffer_id INTEGER,\n"
    "  offset INTEGER, size INTEGER);\n"
    /* Where each node ran and why (docs/placement.md): optional, a trace without it has placement unknown. */
    "CREATE TABLE node_placements(pid INTEGER, sched_id INTEGER, graph_id INTEGER, node_index INTEGER,\n"
    "  node_id INTEGER, backend_id INTEGER, preferred_backend_id INTEGER, reason TEXT, src_nodes TEXT);\n"
    /* Each CPU op on every thread of its compute (record --threads, docs/trace-database.md): optional. */
    "CREATE TABLE op_threads(pid INTEGER, graph_id INTEGER, sched_id INTEGER, split_id INTEGER,\n"
    "  node_index INTEGER, thread INTEGER, tid INTEGER, busy_ns INTEGER, wait_ns INTEGER, imbalance_ns INTEGER);\n"
    "CREATE VIEW buffers AS SELECT b.pid AS pid, b.buffer_id AS buffer_id, b.buft AS name,\n"
    "  NULLIF(b.device, '') AS device, b.size AS size,\n"
    "  CASE WHEN b.usage = 1 THEN 'weights' WHEN b.usage = 2 THEN 'compute'\n"
    "       WHEN EXISTS(SELECT 1 FROM placements p WHERE p.pid = b.pid AND p.buffer_id = b.buffer_id\n"
    "                   AND p.flags & 16 AND NOT p.flags & 32) THEN 'kv'\n"
    "       WHEN EXISTS(SELECT 1 FROM placements p WHERE p.pid = b.pid AND p.buffer_id = b.buffer_id\n"
    "                   AND p.flags & 1 AND NOT p.flags & 32) THEN 'weights' ELSE 'other' END AS kind,\n"
    "  b.alloc_ns AS alloc_ns, b.free_ns AS free_ns, b.is_host AS is_host,\n"
    "  CASE b.source WHEN 1 THEN 'host_ptr' ELSE 'alloc' END AS source,\n"
    "  CASE b.usage WHEN 1 THEN 'weights' WHEN 2 THEN 'compute' ELSE 'any' END AS usage, b.alignment AS alignment\n"
    "  FROM buffer_list b;\n"
    "CREATE VIEW tensor_placement AS SELECT p.pid AS pid, p.plan_id AS plan_id, p.idx AS idx,\n"
    "  p.node_index AS node_index, n.op AS op, NULLIF(n.tensor_name, '') AS tensor_name, n.out_type AS type,\n"
    "  n.ne AS ne, p.buffer_id AS buffer_id, p.offset AS offset, p.size AS size, p.first AS first, p.last AS last,\n"
    "  p.root AS root, p.flags AS flags, p.node_id AS node_id\n"
    "  FROM placements p LEFT JOIN nodes n ON n.pid = p.pid AND n.node_id = p.node_id;\n"
    "CREATE VIEW kernels AS SELECT k.name AS name, k.start_ns AS start_ns, k.duration_ns AS duration_ns,\n"
    "  CASE k.api WHEN 1 THEN 'cuda' WHEN 2 THEN 'opencl' WHEN 3 THEN 'vulkan' ELSE 'unknown' END AS api,\n"
    "  k.device AS device, k.stream AS stream, k.graph_id AS graph_id, k.split_id AS split_id,\n"
    "  k.backend_id AS backend_id, k.node_index AS node_index, n.op AS op, NULLIF(n.tensor_name, '') AS tensor_name,\n"
    "  k.pid AS pid, k.tid AS tid, k.sched_id AS sched_id, k.correlation AS correlation, k.graph_node AS graph_node\n"
    "  FROM kernel_list k LEFT JOIN nodes n ON n.pid = k.pid AND n.node_id = k.node_id;\n"
    "CREATE VIEW backends AS SELECT id, name, device, device_type, pid, sched_id, is_host, description\n"
    "  FROM backend_list;\n"
    "CREATE VIEW graphs AS SELECT graph_id, sched_id, start_ns, duration_ns, n_nodes, n_splits, pid, batch_id\n"
    "  FROM graph_list;\n"
    "CREATE VIEW splits AS SELECT graph_id, split_id, backend_id, start_ns, duration_ns, n_nodes,\n"
    "  ticks_matched, pid, sched_id, node_start, n_ticks, n_expected, engine_ns FROM split_list;\n"
    "CREATE VIEW records AS SELECT e.type AS type, e.name AS name, e.backend_id AS backend_id,\n"
    "  e.split_id AS split_id, e.start_ns AS start_ns, e.duration_ns AS duration_ns, e.bytes AS bytes,\n"
    "  COALESCE(" GGPROF_SQL_FUSED_LABEL("e", "n", "f") ",\n"
    "       CASE WHEN e.type = 1 THEN NULLIF(n.tensor_name, '') END) AS extra,\n"
    "  NULLIF(n.tensor_name, '') AS tensor_name, e.graph_id AS graph_id, e.node_index AS node_index,\n"
    "  e.pid AS pid, e.tid AS tid, COALESCE(n.ne, '[0, 0, 0, 0]') AS ne, COALESCE(n.out_type, -1) AS out_type,\n"
    "  COALESCE(n.n_src, 0) AS n_src, COALESCE(n.ne_src, '[]') AS ne_src, COALESCE(n.nb_src, '[]') AS nb_src,\n"
    "  COALESCE(n.type_src, '[]') AS type_src,\n"
    "  COALESCE(n.op_params, '[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]') AS op_params,\n"
    "  COALESCE(n.sub_op, -1) AS sub_op, e.sched_id AS sched_id, e.timing AS timing, e.wait_ns AS wait_ns,\n"
    "  e.fused_index AS fused_index, n.sub_op_name AS sub_op_name, n.nbytes AS out_bytes, e.rowid AS seq\n"
    "  FROM events e LEFT JOIN nodes n ON n.pid = e.pid AND n.node_id = e.node_id\n"
    "  LEFT JOIN nodes f ON f.pid = e.pid AND f.node_id = e.fused_node_id;\n";

/* k_ddl one statement at a time: returns the next statement after *p (its kind "TABLE" or "VIEW", its name and its
 * text) and advances *p, or 0 at the end. */
static int ddl_next(const char **p, int *is_view, char *name, size_t name_len, const char **text, size_t *text_len) {
    const char *s = *p;
    while (*s == '\n' || *s == ' ') s++;
    if (!*s) return 0;
    const char *end = strstr(s, ";\n");
    end             = end ? end + 1 : s + strlen(s);
    *text = s, *text_len = (size_t) (end - s), *p = end;
    *is_view   = strncmp(s, "CREATE VIEW ", 12) == 0;
    const char *n = s + (*is_view ? 12 : 13); /* "CREATE TABLE " */
    if (strncmp(n, "IF NOT EXISTS ", 14) == 0) n += 14;
    size_t k = strcspn(n, "( ");
    snprintf(name, name_len, "%.*s", (int) k, n);
    return 1;
}

/* ggprof's own text of table (is_view 0) or view name, or NULL. */
static const char *ddl_of(const char *name, int want_view, size_t *len) {
    const char *p = k_ddl, *text;
    char n[64];
    int is_view;
    while (ddl_next(&p, &is_view, n, sizeof(n), &text, len)) {
        if (is_view == want_view && strcmp(n, name) == 0) return text;
    }
    return NULL;
}

void ggprof_db_harden(sqlite3 *db, int own_views) {
    int off = 0, on = 1;
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, on, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, off, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, off, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, off, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, own_views ? on : off, NULL); /* TEMP views stay on */
}

int ggprof_db_create_table(sqlite3 *db, const char *name) {
    size_t len;
    const char *text = ddl_of(name, 0, &len);
    if (!text) return SQLITE_ERROR;
    char *sql = sqlite3_mprintf("%.*s", (int) len, text);
    int rc    = sql ? sqlite3_exec(db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    return rc;
}

int ggprof_db_create_views(sqlite3 *db, const char *schema) {
    const char *p = k_ddl, *text;
    char name[64];
    int is_view, temp = strcmp(schema, "temp") == 0;
    size_t len;
    while (ddl_next(&p, &is_view, name, sizeof(name), &text, &len)) {
        if (!is_view) continue;
        /* "CREATE VIEW name AS ..." -> "CREATE TEMP VIEW IF NOT EXISTS name AS ..." */
        char *sql = sqlite3_mprintf("CREATE %sVIEW IF NOT EXISTS %.*s", temp ? "TEMP " : "", (int) len - 12, text + 12);
        int rc    = sql ? sqlite3_exec(db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
        sqlite3_free(sql);
        if (rc == SQLITE_NOMEM) return rc;
        /* a view over tables an older trace lacks is left out, as that trace has it not */
        sqlite3_stmt *st = NULL;
        sql = sqlite3_mprintf("SELECT * FROM \"%w\".\"%w\" LIMIT 0", schema, name);
        if (sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
            sqlite3_free(sql);
            sql = sqlite3_mprintf("DROP VIEW IF EXISTS \"%w\".\"%w\"", schema, name);
            if (sql) sqlite3_exec(db, sql, NULL, NULL, NULL);
        }
        sqlite3_finalize(st);
        sqlite3_free(sql);
    }
    return SQLITE_OK;
}

/* 1 when ggprof's table t has column c (its current schema, which holds every older version's columns). */
static int ggprof_column(sqlite3 *ref, const char *t, const char *c) {
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(ref, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, c, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

int ggprof_db_check_columns(sqlite3 *db, const char *schema, const char *path, char *why, size_t why_len) {
    sqlite3 *ref = NULL;
    char *err = NULL;
    if (sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
        ggprof_db_create_schema(ref, &err) != SQLITE_OK) {
        snprintf(why, why_len, "internal: the trace schema: %s", err ? err : sqlite3_errmsg(ref));
        sqlite3_free(err);
        sqlite3_close(ref);
        return -1;
    }
    /* every table of the input and each of its columns, from SQLite's own parse of the schema (no SQL text of
     * the input is run) */
    char *sql = sqlite3_mprintf("SELECT m.name, m.sql LIKE 'CREATE TABLE %%', c.name FROM \"%w\".sqlite_master m"
                                " LEFT JOIN pragma_table_info(m.name, %Q) c WHERE m.type = 'table'"
                                " AND m.name NOT LIKE 'sqlite\\_%%' ESCAPE '\\' ORDER BY m.rowid, c.cid", schema, schema);
    sqlite3_stmt *st = NULL;
    int rc = sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK ? 0 : -1;
    if (rc) snprintf(why, why_len, "'%s' cannot be read as a trace: %s", path, sqlite3_errmsg(db));
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        const char *t = (const char *) sqlite3_column_text(st, 0), *c = (const char *) sqlite3_column_text(st, 2);
        size_t len;
        if (!t || !ddl_of(t, 0, &len) || !sqlite3_column_int(st, 1)) {
            snprintf(why, why_len, "'%s' has table '%.64s', which is not a table of a ggprof trace; refused", path, t ? t : "");
            rc = -1;
        } else if (!c || !ggprof_column(ref, t, c)) {
            snprintf(why, why_len, "'%s': table '%s' has column '%.64s', which is not a column of trace schema version"
                     " %d or older; refused", path, t, c ? c : "", GGPROF_DB_VERSION);
            rc = -1;
        }
    }
    sqlite3_finalize(st);
    sqlite3_free(sql);
    sqlite3_close(ref);
    return rc;
}

/* The columns of table t of schema s, each quoted ("a", "b"); NULL on error. The names were checked against
 * ggprof's schema (ggprof_db_check_columns) and are quoted all the same. */
char *ggprof_db_column_list(sqlite3 *db, const char *s, const char *t) {
    sqlite3_stmt *st = NULL;
    char *list = sqlite3_mprintf("%s", "");
    if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1, ?2) ORDER BY cid", -1, &st, NULL) != SQLITE_OK) {
        sqlite3_free(list);
        return NULL;
    }
    sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, s, -1, SQLITE_STATIC);
    while (list && sqlite3_step(st) == SQLITE_ROW) {
        char *more = sqlite3_mprintf("%s%s\"%w\"", list, *list ? ", " : "", (const char *) sqlite3_column_text(st, 0));
        sqlite3_free(list);
        list = more;
    }
    sqlite3_finalize(st);
    return list;
}

/* path as an SQLite URI that opens it read-only (every byte but [A-Za-z0-9/._-] percent-encoded). */
static char *readonly_uri(const char *path) {
    size_t n = strlen(path);
    char *u  = sqlite3_malloc64(3 * (sqlite3_uint64) n + 32);
    if (!u) return NULL;
    char *o = u + sprintf(u, "file:");
    for (const unsigned char *p = (const unsigned char *) path; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("/._-", *p)) {
            *o++ = (char) *p;
        } else {
            o += sprintf(o, "%%%02X", *p);
        }
    }
    strcpy(o, "?mode=ro");
    return u;
}

int ggprof_db_attach_input(sqlite3 *db, const char *path, const char *as, char *why, size_t why_len) {
    int views = 1;
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, -1, &views);
    ggprof_db_harden(db, views);
    char *uri = readonly_uri(path);
    char *sql = uri ? sqlite3_mprintf("ATTACH %Q AS \"%w\"", uri, as) : NULL;
    int rc    = sql ? sqlite3_exec(db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    sqlite3_free(uri);
    if (rc != SQLITE_OK) {
        snprintf(why, why_len, "cannot open '%s': %s", path, sqlite3_errmsg(db));
        return -1;
    }
    if (sqlite3_db_readonly(db, as) != 1) snprintf(why, why_len, "internal: '%s' attached writable", path);
    if (sqlite3_db_readonly(db, as) != 1 || ggprof_db_check_columns(db, as, path, why, why_len) != 0) {
        sql = sqlite3_mprintf("DETACH \"%w\"", as);
        if (sql) sqlite3_exec(db, sql, NULL, NULL, NULL);
        sqlite3_free(sql);
        return -1;
    }
    return 0;
}

/* For each table of an older trace that lacks columns ggprof's has (graph_list.batch_id before version 3), a TEMP
 * view of that name with them NULL, so that ggprof's views (which name the table unqualified: TEMP comes first)
 * read it as a trace of today. From ggprof's column names, quoted; the trace's only decide which are NULL. */
static int widen_older_tables(sqlite3 *db) {
    sqlite3 *ref = NULL;
    if (sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
        ggprof_db_create_schema(ref, NULL) != SQLITE_OK) {
        sqlite3_close(ref);
        return -1;
    }
    sqlite3_stmt *tables = NULL, *cols = NULL, *has = NULL;
    int rc = sqlite3_prepare_v2(ref, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &tables, NULL) == SQLITE_OK &&
                     sqlite3_prepare_v2(ref, "SELECT name FROM pragma_table_info(?1) ORDER BY cid", -1, &cols, NULL) == SQLITE_OK &&
                     sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info(?1, 'main') WHERE name = ?2 OR ?2 IS NULL", -1,
                                        &has, NULL) == SQLITE_OK
                 ? 0
                 : -1;
    while (rc == 0 && sqlite3_step(tables) == SQLITE_ROW) {
        const char *t = (const char *) sqlite3_column_text(tables, 0);
        sqlite3_bind_text(has, 1, t, -1, SQLITE_TRANSIENT);
        sqlite3_bind_null(has, 2);
        int present = sqlite3_step(has) == SQLITE_ROW && sqlite3_column_int(has, 0) > 0;
        sqlite3_reset(has);
        if (!present) continue;
        char *sel = sqlite3_mprintf("%s", ""); /* "a", NULL AS "b", ... */
        int missing = 0;
        sqlite3_bind_text(cols, 1, t, -1, SQLITE_TRANSIENT);
        while (sel && sqlite3_step(cols) == SQLITE_ROW) {
            const char *c = (const char *) sqlite3_column_text(cols, 0);
            sqlite3_bind_text(has, 2, c, -1, SQLITE_TRANSIENT);
            int own = sqlite3_step(has) == SQLITE_ROW && sqlite3_column_int(has, 0) > 0;
            sqlite3_reset(has);
            missing += !own;
            char *more = sqlite3_mprintf("%s%s%s\"%w\"", sel, *sel ? ", " : "", own ? "" : "NULL AS ", c);
            sqlite3_free(sel);
            sel = more;
        }
        sqlite3_reset(cols);
        if (sel && missing) {
            char *sql = sqlite3_mprintf("CREATE TEMP VIEW \"%w\" AS SELECT %s FROM main.\"%w\"", t, sel, t);
            if (!sql || sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) rc = -1;
            sqlite3_free(sql);
        }
        rc = sel ? rc : -1;
        sqlite3_free(sel);
    }
    sqlite3_finalize(tables);
    sqlite3_finalize(cols);
    sqlite3_finalize(has);
    sqlite3_close(ref);
    return rc;
}

int ggprof_db_open_input(const char *path, sqlite3 **db, char *why, size_t why_len) {
    *db = NULL;
    /* A collector killed mid-batch leaves a hot journal, which only a writer rolls back; then the trace reads up
     * to its last committed batch. That connection reads nothing but SQLite's own header. */
    char journal[4096];
    snprintf(journal, sizeof(journal), "%s-journal", path);
    if (access(journal, F_OK) == 0 && access(path, W_OK) == 0) {
        sqlite3 *rw = NULL;
        if (sqlite3_open_v2(path, &rw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK) {
            ggprof_db_harden(rw, 0);
            sqlite3_exec(rw, "PRAGMA schema_version", NULL, NULL, NULL);
        }
        sqlite3_close(rw);
    }
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(why, why_len, "cannot open '%s': %s", path, *db ? sqlite3_errmsg(*db) : "out of memory");
        sqlite3_close(*db);
        *db = NULL;
        return -1;
    }
    ggprof_db_harden(*db, 0);
    if (ggprof_db_check(*db, path, why, why_len) != 0 || ggprof_db_check_columns(*db, "main", path, why, why_len) != 0) {
        sqlite3_close(*db);
        *db = NULL;
        return -1;
    }
    if (widen_older_tables(*db) != 0 || ggprof_db_create_views(*db, "temp") != SQLITE_OK) {
        snprintf(why, why_len, "cannot read '%s': %s", path, sqlite3_errmsg(*db));
        sqlite3_close(*db);
        *db = NULL;
        return -1;
    }
    return 0;
}

int ggprof_db_create_schema(sqlite3 *db, char **err) {
    int rc = sqlite3_exec(db, k_ddl, NULL, NULL, err);
    if (rc != SQLITE_OK) return rc;
    if (ggprof_db_meta(db, "format", GGPROF_DB_FORMAT) != 0 || ggprof_db_meta_int(db, "schema_version", GGPROF_DB_VERSION) != 0) {
        if (err) *err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
        return sqlite3_errcode(db) != SQLITE_OK ? sqlite3_errcode(db) : SQLITE_ERROR;
    }
    return SQLITE_OK;
}

int ggprof_db_check(sqlite3 *db, const char *path, char *why, size_t why_len) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &st, NULL) != SQLITE_OK) {
        const char *msg = sqlite3_errmsg(db);
        if (strstr(msg, "no such table")) {
            snprintf(why, why_len, "'%s' is not a ggprof trace (no table 'meta'); expected a file written by 'ggprof record'",
                     path);
        } else {
            snprintf(why, why_len, "'%s' is not a ggprof trace (%s); expected a file written by 'ggprof record'", path, msg);
        }
        sqlite3_finalize(st);
        return -1;
    }
    int version = -1;
    if (sqlite3_step(st) == SQLITE_ROW) version = atoi((const char *) sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (version < GGPROF_DB_VERSION_MIN || version > GGPROF_DB_VERSION) {
        snprintf(why, why_len, "'%s' has trace schema version %d; this ggprof reads versions %d to %d", path, version,
                 GGPROF_DB_VERSION_MIN, GGPROF_DB_VERSION);
        return -1;
    }
    return 0;
}

int ggprof_windows_store(sqlite3 *db, const ggprof_window *w, int n) {
    if (sqlite3_exec(db, GGPROF_DB_WINDOWS_DDL, NULL, NULL, NULL) != SQLITE_OK) return -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO windows(start_ns, end_ns, opened_by, closed_by) VALUES(?, ?, ?, ?)", -1, &st,
                           NULL) != SQLITE_OK) {
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64) w[i].start_ns);
        sqlite3_bind_int64(st, 2, (sqlite3_int64) w[i].end_ns);
        sqlite3_bind_text(st, 3, w[i].opened_by, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, w[i].closed_by, -1, SQLITE_STATIC);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

const char *ggprof_fused_label(char *buf, size_t len, const char *extra, const char *op, const char *fused_op) {
    if (extra && *extra) return extra;
    if (!op || !fused_op) return NULL;
    snprintf(buf, len, "%s+%s", op, fused_op);
    return buf;
}

int ggprof_db_ints(const char *s, int64_t *out, int max) {
    int n = 0;
    for (const char *p = s; p && *p && n < max; p++) {
        if ((*p >= '0' && *p <= '9') || (*p == '-' && p[1] >= '0' && p[1] <= '9')) {
            char *end;
            out[n++] = strtoll(p, &end, 10);
            p        = end - 1;
        }
    }
    return n;
}

/* ---- writing a trace: notes, meta keys, rows by column name ---- */

int ggprof_db_prepare_write(sqlite3 *db, const char *sql, sqlite3_stmt **st) {
    *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK) return 0;
    fprintf(stderr, "ggprof: internal: trace database: cannot prepare '%s': %s\n", sql, sqlite3_errmsg(db));
    sqlite3_finalize(*st);
    *st = NULL;
    return -1;
}

static int param(sqlite3_stmt *st, const char *name) {
    int i = sqlite3_bind_parameter_index(st, name);
    if (i == 0) fprintf(stderr, "ggprof: internal: trace database: no parameter %s in '%s'\n", name, sqlite3_sql(st));
    return i;
}

int ggprof_db_bind_int(sqlite3_stmt *st, const char *name, int64_t v) {
    int i = param(st, name);
    return i && sqlite3_bind_int64(st, i, (sqlite3_int64) v) == SQLITE_OK ? 0 : -1;
}

int ggprof_db_bind_real(sqlite3_stmt *st, const char *name, double v) {
    int i = param(st, name);
    return i && sqlite3_bind_double(st, i, v) == SQLITE_OK ? 0 : -1;
}

int ggprof_db_bind_text(sqlite3_stmt *st, const char *name, const char *v) {
    int i = param(st, name);
    return i && (v ? sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i)) == SQLITE_OK ? 0 : -1;
}

int ggprof_db_bind_null(sqlite3_stmt *st, const char *name) {
    int i = param(st, name);
    return i && sqlite3_bind_null(st, i) == SQLITE_OK ? 0 : -1;
}

int ggprof_db_step_write(sqlite3_stmt *st) {
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_reset(st);
    return rc;
}

/* Prepares sql, binds :pid and the text parameter name, steps once. */
static int write_once(sqlite3 *db, const char *sql, const char *name, const char *text, int64_t pid) {
    sqlite3_stmt *st = NULL;
    if (ggprof_db_prepare_write(db, sql, &st) != 0) return -1;
    int rc = ggprof_db_bind_int(st, ":pid", pid) == 0 && ggprof_db_bind_text(st, name, text) == 0 ? ggprof_db_step_write(st) : -1;
    sqlite3_finalize(st);
    return rc;
}

int ggprof_db_note(sqlite3 *db, int32_t pid, const char *text) {
    return write_once(db, "INSERT INTO notes(pid, text) VALUES(:pid, :text)", ":text", text, pid);
}

int ggprof_db_meta(sqlite3 *db, const char *key, const char *value) {
    sqlite3_stmt *st = NULL;
    if (ggprof_db_prepare_write(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(:key, :value)", &st) != 0) return -1;
    int rc = ggprof_db_bind_text(st, ":key", key) == 0 && ggprof_db_bind_text(st, ":value", value) == 0 ? ggprof_db_step_write(st) : -1;
    sqlite3_finalize(st);
    return rc;
}

int ggprof_db_meta_int(sqlite3 *db, const char *key, int64_t value) {
    char v[24];
    snprintf(v, sizeof(v), "%lld", (long long) value);
    return ggprof_db_meta(db, key, v);
}

int ggprof_db_put_lost_records(sqlite3 *db, uint64_t lost) {
    sqlite3_stmt *st = NULL;
    int64_t named = -1;
    if (sqlite3_prepare_v2(db, "SELECT COALESCE(sum(records), 0) FROM losses", -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "ggprof: internal: trace database: cannot read losses: %s\n", sqlite3_errmsg(db));
        return -1;
    }
    if (sqlite3_step(st) == SQLITE_ROW) named = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (named < 0 || lost <= (uint64_t) named) return named < 0 ? -1 : 0;
    if (ggprof_db_prepare_write(db, "INSERT INTO losses(pid, graph_id, records) VALUES(NULL, NULL, :records)", &st) != 0) {
        return -1;
    }
    uint64_t rest = lost - (uint64_t) named;
    int rc = ggprof_db_bind_int(st, ":records", rest > INT64_MAX ? INT64_MAX : (int64_t) rest) == 0 ? ggprof_db_step_write(st) : -1;
    sqlite3_finalize(st);
    return rc;
}

/* The engine sends a plan's threads each time they exceed the most it sent, but its threads' slots are drained in
 * no particular order: the most is kept. */
int ggprof_db_put_cpu_threads(sqlite3 *db, int32_t pid, int64_t n_threads) {
    sqlite3_stmt *st = NULL;
    if (ggprof_db_prepare_write(db, "INSERT INTO meta(key, value) VALUES('threads.' || :pid, CAST(:n AS TEXT))"
                                    " ON CONFLICT(key) DO UPDATE SET value = excluded.value"
                                    " WHERE CAST(excluded.value AS INTEGER) > CAST(meta.value AS INTEGER)", &st) != 0) {
        return -1;
    }
    int rc = ggprof_db_bind_int(st, ":pid", pid) == 0 && ggprof_db_bind_int(st, ":n", n_threads) == 0 ? ggprof_db_step_write(st) : -1;
    sqlite3_finalize(st);
    return rc;
}

int64_t ggprof_db_cpu_threads(sqlite3 *db, int32_t pid) {
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'threads.' || ?1", -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "ggprof: internal: trace database: cannot read meta threads.%d: %s\n", (int) pid, sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int(st, 1, pid);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n > 0 ? n : -1;
}
