/* Benchmark (not a test): the collector's CPU time per million records, spilling only (record without --metrics)
 * and spilling plus the live aggregates (record --metrics, collector/live.c), on a synthetic stream shaped like
 * llama-server's at level op: node descriptions once, then per graph a CPU split of 73 ops (a CPU_OPS message, two
 * records an op: the OP and its barrier wait), the split, the graph and a llama_decode batch.
 * usage: collector_cpu MILLIONS_OF_RECORDS SPILL_FILE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "live.h"
#include "spill.h"

#define N_OPS 73

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: collector_cpu MILLIONS_OF_RECORDS SPILL_FILE\n");
        return 2;
    }
    double millions = atof(argv[1]);
    static const char *const ops[] = { "MUL_MAT", "ADD", "RMS_NORM", "MUL", "ROPE", "SOFT_MAX", "GET_ROWS", "CPY" };
    size_t desc_len = 0, graph_len = 0;
    static char desc[N_OPS * sizeof(ggprof_msg_node) + sizeof(ggprof_msg_backend) + sizeof(ggprof_msg_cpu_ops_plan) +
                     N_OPS * sizeof(ggprof_cpu_op_id)];
    static char graph[sizeof(ggprof_msg_cpu_ops) + N_OPS * sizeof(ggprof_cpu_op) + sizeof(ggprof_msg_split) +
                      sizeof(ggprof_msg_graph) + sizeof(ggprof_msg_batch)];
    ggprof_msg_backend *b = (void *) desc;
    memset(b, 0, sizeof(*b));
    b->h = (ggprof_msg_hdr) { sizeof(*b), GGPROF_MSG_BACKEND, 0 };
    b->sched_id = 1;
    snprintf(b->name, sizeof(b->name), "CPU");
    desc_len += sizeof(*b);
    for (int i = 0; i < N_OPS; i++) {
        ggprof_msg_node *n = (void *) (desc + desc_len);
        memset(n, 0, sizeof(*n));
        n->h = (ggprof_msg_hdr) { sizeof(*n), GGPROF_MSG_NODE, 0 };
        n->node_id = (uint32_t) i + 1;
        n->nbytes  = 4096;
        snprintf(n->op, sizeof(n->op), "%s", ops[i % 8]);
        desc_len += sizeof(*n);
    }
    ggprof_msg_cpu_ops_plan *pl = (void *) (desc + desc_len); /* the split's plan: op k is node k + 1 */
    pl->h = (ggprof_msg_hdr) { (uint32_t) (sizeof(*pl) + N_OPS * sizeof(ggprof_cpu_op_id)), GGPROF_MSG_CPU_OPS_PLAN, 0 };
    pl->plan_id = 1, pl->first = 0, pl->n = N_OPS, pl->n_total = N_OPS;
    for (int k = 0; k < N_OPS; k++) pl->ids[k] = (ggprof_cpu_op_id) { (uint32_t) k + 1, 0, k, -1 };
    desc_len += pl->h.size;
    ggprof_msg_cpu_ops *c = (void *) graph;
    memset(c, 0, sizeof(*c) + N_OPS * sizeof(ggprof_cpu_op));
    c->h = (ggprof_msg_hdr) { (uint32_t) (sizeof(*c) + N_OPS * sizeof(ggprof_cpu_op)), GGPROF_MSG_CPU_OPS,
                              GGPROF_CPU_OPS_FIRST | GGPROF_CPU_OPS_LAST };
    c->sched_id = 1, c->n_ops = N_OPS, c->plan_id = 1;
    graph_len = c->h.size;
    ggprof_msg_split *s = (void *) (graph + graph_len);
    memset(s, 0, sizeof(*s));
    s->h = (ggprof_msg_hdr) { sizeof(*s), GGPROF_MSG_SPLIT, 0 };
    s->sched_id = 1;
    graph_len += sizeof(*s);
    ggprof_msg_graph *g = (void *) (graph + graph_len);
    memset(g, 0, sizeof(*g));
    g->h = (ggprof_msg_hdr) { sizeof(*g), GGPROF_MSG_GRAPH, 0 };
    graph_len += sizeof(*g);
    ggprof_msg_batch *bt = (void *) (graph + graph_len);
    memset(bt, 0, sizeof(*bt));
    bt->h = (ggprof_msg_hdr) { sizeof(*bt), GGPROF_MSG_BATCH, 0 };
    bt->n_tokens = 1, bt->n_seqs = 1;
    bt->seqs[0] = (ggprof_batch_seq) { 0, 1, 0, 0, 1, 0 };
    graph_len += sizeof(*bt);
    long graphs = (long) (millions * 1e6 / (2 * N_OPS));
    ggprof_ring_slot slot;
    memset(&slot, 0, sizeof(slot));
    slot.pid = 1, slot.tid = 1;
    double t[2];
    for (int live_on = 0; live_on < 2; live_on++) {
        ggprof_spill sp;
        if (ggprof_spill_open(&sp, argv[2]) != 0) return 1;
        ggprof_live *l = live_on ? ggprof_live_new() : NULL;
        double t0 = cpu_s();
        ggprof_spill_chunk(&sp, &slot, desc, desc_len);
        if (l) ggprof_live_chunk(l, 1, desc, desc_len);
        uint64_t now = 1000;
        for (long i = 0; i < graphs; i++) {
            c->start_ns = now, c->end_ns = now + 100000;
            for (int k = 0; k < N_OPS; k++) {
                c->ops[k] = (ggprof_cpu_op) { now + 1000 * (uint64_t) (k + 1), 200, 0 };
            }
            g->graph_id = c->graph_id = s->graph_id = (uint64_t) i + 1;
            g->batch = bt->batch = (uint32_t) i + 1;
            bt->seqs[0].pos_min = bt->seqs[0].pos_max = (int32_t) (i % 512);
            bt->start_ns = now;
            now += 200000;
            ggprof_spill_chunk(&sp, &slot, graph, graph_len);
            if (l) {
                ggprof_live_chunk(l, 1, graph, graph_len);
                if (i % 64 == 0) ggprof_live_settle(l, now, 0);
            }
        }
        t[live_on] = cpu_s() - t0;
        ggprof_live_free(l);
        ggprof_spill_close(&sp);
    }
    double rec = (double) graphs * 2 * N_OPS / 1e6;
    printf("%.2f million records (%ld graphs of %d CPU ops)\n", rec, graphs, N_OPS);
    printf("collector CPU s per million records: spill only %.3f, spill + live aggregates %.3f (ratio %.2f; aggregation "
           "alone %.3f)\n", t[0] / rec, t[1] / rec, t[0] > 0 ? t[1] / t[0] : 0, (t[1] - t[0]) / rec);
    return 0;
}
