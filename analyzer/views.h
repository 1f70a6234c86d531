/* The analyzer's roll-up views (layers, blocks, phases), created as TEMP views on every trace it opens. */
#ifndef GGPROF_VIEWS_H
#define GGPROF_VIEWS_H

#include <sqlite3.h>

/* Registers ggprof_layer(), ggprof_block(), ggprof_backend_label() and ggprof_type_label() (model.h) and creates the TEMP views op_layers, layer_time,
 * layer_op_time, block_time, block_op_time, graph_phase and phase_time (docs/queries.md). Works on any
 * trace database, old or imported from JSON, read-only or not. Returns SQLITE_OK or an SQLite error code. */
int ggprof_views_create(sqlite3 *db);

#endif
