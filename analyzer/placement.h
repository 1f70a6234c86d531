/* Where each node ran and why (docs/placement.md), read from the trace's node_placements table: report's section,
 * the HTML tooltip's data, the Graphviz view of one layer. */
#ifndef GGPROF_PLACEMENT_H
#define GGPROF_PLACEMENT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "output.h"

/* Whether the trace says where its nodes ran (a trace without the table: placement unknown). */
bool ggprof_placement_present(sqlite3 *db);

/* Per backend (plans, nodes, fallbacks, op time) and the fallbacks by op, reason and backend (nodes, op time, the
 * copies of their results), largest op time first. 0, or -1 (nothing to free). */
int ggprof_placement_tables(sqlite3 *db, ggprof_table *backends, ggprof_table *fallbacks);

/* report's Placement section; nothing when the trace has no placement. */
void ggprof_placement_print(FILE *out, sqlite3 *db);

/* The HTML viewer's "placements" key (with its leading comma): per plan, the nodes that fell back and why. */
void ggprof_placement_html(FILE *f, sqlite3 *db);

/* One layer (layer < 0: the lowest one named; every node when no name carries a layer) of one graph (graph < 0: the first graph of the largest plan) as a
 * Graphviz digraph at path: a box per node (op, name, shape, backend, time), filled by backend, fallbacks outlined
 * and labelled with their reason, edges from sources. 0, or -1 with a one-line reason. */
int ggprof_placement_dot(sqlite3 *db, const char *path, int layer, int64_t graph, char *why, size_t why_len);

#endif
