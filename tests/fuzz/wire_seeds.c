/* Writes seed inputs for fuzz_wire into DIR: one of each message kind, as the engine lays them out (schema/wire.h),
 * then all of them in one run of bytes. usage: wire_seeds DIR */
#include <stdio.h>
#include <string.h>

#include "wire.h"

static unsigned char g_all[1 << 16];
static size_t        g_all_n;

static void put(const char *dir, const char *name, const void *m, size_t n) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(m, 1, n, f);
        fclose(f);
    }
    if (g_all_n + n <= sizeof(g_all)) memcpy(g_all + g_all_n, m, n), g_all_n += n;
}

int main(int argc, char **argv) {
    if (argc != 2) return fprintf(stderr, "usage: wire_seeds DIR\n"), 2;
    const char *d = argv[1];
    ggprof_msg_process p = { { sizeof(p), GGPROF_MSG_PROCESS, 0 }, 1, 0, 100, "/bin/prog", "0.23.0", "abc", "/lib/ggml" };
    put(d, "process", &p, sizeof(p));
    ggprof_msg_type t = { { sizeof(t), GGPROF_MSG_TYPE, 0 }, 0, 1, 4, "f32" };
    put(d, "type", &t, sizeof(t));
    ggprof_msg_backend b = { { sizeof(b), GGPROF_MSG_BACKEND, 0 }, 1, 0, 0, 1, "CPU", "CPU", "cpu" };
    put(d, "backend", &b, sizeof(b));
    ggprof_msg_node n;
    memset(&n, 0, sizeof(n));
    n.h = (ggprof_msg_hdr){ sizeof(n), GGPROF_MSG_NODE, 0 };
    n.node_id = 1, n.n_src = 2, n.op_id = 29, n.sub_op = -1;
    for (int i = 0; i < 4; i++) n.ne[i] = 1, n.ne_src[0][i] = 1, n.ne_src[1][i] = 1, n.nb_src[0][i] = 4, n.nb_src[1][i] = 4;
    strcpy(n.op, "MUL_MAT"), strcpy(n.tensor_name, "Qcur-0");
    put(d, "node", &n, sizeof(n));
    ggprof_msg_graph g = { { sizeof(g), GGPROF_MSG_GRAPH, 0 }, 0, 1, 3, 1, 0, 1000, 500 };
    put(d, "graph", &g, sizeof(g));
    ggprof_msg_split s = { { sizeof(s), GGPROF_MSG_SPLIT, 0 }, 0, 1, 0, 0, 3, 0, 1, 1, 1, 1000, 500, 10 };
    put(d, "split", &s, sizeof(s));
    ggprof_msg_event e;
    memset(&e, 0, sizeof(e));
    e.h = (ggprof_msg_hdr){ sizeof(e), GGPROF_MSG_EVENT, 0 };
    e.node_id = 1, e.sched_id = 1, e.node_index = 0, e.fused_index = -1, e.start_ns = 1000, e.duration_ns = 100;
    put(d, "event", &e, sizeof(e));
    struct {
        ggprof_msg_cpu_ops m;
        ggprof_cpu_op      op[2];
    } c;
    memset(&c, 0, sizeof(c));
    c.m.h = (ggprof_msg_hdr){ sizeof(c), GGPROF_MSG_CPU_OPS, GGPROF_CPU_OPS_FIRST | GGPROF_CPU_OPS_LAST };
    c.m.sched_id = 1, c.m.n_ops = 2, c.m.start_ns = 1000, c.m.end_ns = 1500, c.m.floor_ns = 1000;
    /* stamps at 2 a ns: 2400 is 1200 ns */
    c.m.anchor_stamp = 2000, c.m.anchor_ns = 1000, c.m.end_stamp = 3000, c.m.end_anchor_ns = 1500;
    c.m.plan_id = 1;
    c.op[0] = (ggprof_cpu_op){ 2400, 20, 0 };
    c.op[1] = (ggprof_cpu_op){ 2800, 0, 10 };
    struct {
        ggprof_msg_cpu_ops_plan m;
        ggprof_cpu_op_id        id[2];
    } pl = { { { sizeof(pl), GGPROF_MSG_CPU_OPS_PLAN, 0 }, 1, 0, 2, 2 }, { { 1, 0, 0, -1 }, { 1, 0, 1, -1 } } };
    put(d, "cpu_ops_plan", &pl, sizeof(pl));
    ggprof_msg_batch bt; /* one sequence of one token: the message ends after it */
    memset(&bt, 0, sizeof(bt));
    bt.h = (ggprof_msg_hdr){ GGPROF_BATCH_SIZE(1), GGPROF_MSG_BATCH, 0 };
    bt.batch = 1, bt.n_tokens = 1, bt.n_seqs = 1, bt.n_outputs = 1, bt.start_ns = 900, bt.duration_ns = 700;
    bt.seqs[0] = (ggprof_batch_seq){ 0, 1, 5, 5, 1, 0 };
    put(d, "batch", &bt, GGPROF_BATCH_SIZE(1));
    put(d, "cpu_ops", &c, sizeof(c));
    ggprof_msg_note no = { { sizeof(no), GGPROF_MSG_NOTE, 0 }, "a note" };
    put(d, "note", &no, sizeof(no));
    ggprof_msg_cpu_plan cp = { { sizeof(cp), GGPROF_MSG_CPU_PLAN, 0 }, 4, 0 };
    put(d, "cpu_plan", &cp, sizeof(cp));
    ggprof_msg_thread_end te = { { sizeof(te), GGPROF_MSG_THREAD_END, 0 }, 2, 0, 900, 5000, 3000, 100, 7, "worker" };
    put(d, "thread_end", &te, sizeof(te));
    ggprof_msg_kernel k;
    memset(&k, 0, sizeof(k));
    k.h = (ggprof_msg_hdr){ sizeof(k), GGPROF_MSG_KERNEL, 0 };
    k.graph_id = GGPROF_GRAPH_NONE, k.start_ns = 1000, k.end_ns = 1100, k.api = GGPROF_API_VULKAN;
    strcpy(k.name, "mul_mat_vec_f16_f32_f32");
    put(d, "kernel", &k, sizeof(k));
    ggprof_msg_region r = { { sizeof(r), GGPROF_MSG_REGION, 0 }, 1000, 2000, 0, 0, "prompt" };
    put(d, "region", &r, sizeof(r));
    put(d, "all", g_all, g_all_n);
    return 0;
}
