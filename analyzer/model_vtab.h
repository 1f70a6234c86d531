/* The model (model.h) as SQL: what the views (views.c) read. */
#ifndef GGPROF_MODEL_VTAB_H
#define GGPROF_MODEL_VTAB_H

#include <sqlite3.h>

/* Registers the eponymous virtual tables ggprof_op_layer(seq, layer) and ggprof_graph_phase(...) that the views
 * read: computed on first use and again when the database changed. Returns an SQLite code. */
int ggprof_model_register(sqlite3 *db);

#endif
