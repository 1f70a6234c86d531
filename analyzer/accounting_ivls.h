/* What the accounting keeps of a process for its slices: private to accounting.c, which fills it, and
 * accounting_slices.c, which lays the categories on it. */
#ifndef GGPROF_ACCOUNTING_IVLS_H
#define GGPROF_ACCOUNTING_IVLS_H

#include "intervals.h"

/* The merged lists account() cut the categories from (graphs, graphs and llama_decode calls, the thread idle outside
 * them, the model loads, every set-up call), and where the set-up (t_use) and the work (t_work) begin. */
struct ggprof_acc_ivls {
    ivl_list g, u, idle, ld, setup;
    int64_t  t_use, t_work;
};

#endif
