/* A ggml program for tests/e2e/fork_exec.sh: processes that compute graphs after fork and in turn under exec.
 *   fork_exec compute N NAME [US]  computes N graphs whose output tensor is named NAME, US microseconds apart
 *   fork_exec fork             computes 5 graphs ("before_fork"), forks; the child computes 7 ("in_child") on a
 *                              scheduler of its own, the parent 3 more ("after_fork") on a new one; the parent
 *                              waits for the child and exits with its status.
 * One thread per compute: ggml-cpu built with OpenMP must not start a thread team before a fork. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

typedef struct {
    ggml_backend_t       cpu;
    ggml_backend_sched_t sched;
    struct ggml_context *ctx;
    struct ggml_tensor  *x, *out;
    struct ggml_cgraph  *gf;
} work;

static int work_init(work *w, const char *name) {
    w->cpu = ggml_backend_cpu_init();
    if (!w->cpu) return fprintf(stderr, "fork_exec: no CPU backend\n"), 1;
    ggml_backend_cpu_set_n_threads(w->cpu, 1);
    w->sched = ggml_backend_sched_new(&w->cpu, NULL, 1, GGML_DEFAULT_GRAPH_SIZE, false, true);
    struct ggml_init_params ip = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    w->ctx = ggml_init(ip);
    w->x   = ggml_new_tensor_2d(w->ctx, GGML_TYPE_F32, 32, 32);
    ggml_set_input(w->x);
    w->out = ggml_soft_max(w->ctx, ggml_scale(w->ctx, w->x, 0.5f));
    ggml_set_name(w->out, name);
    ggml_set_output(w->out);
    w->gf = ggml_new_graph(w->ctx);
    ggml_build_forward_expand(w->gf, w->out);
    if (!ggml_backend_sched_alloc_graph(w->sched, w->gf)) return fprintf(stderr, "fork_exec: cannot allocate\n"), 1;
    return 0;
}

static int work_run(work *w, int n, int pause_us) {
    static float data[32 * 32];
    for (int i = 0; i < n; i++) {
        if (i > 0 && pause_us > 0) usleep((useconds_t) pause_us);
        ggml_backend_tensor_set(w->x, data, 0, sizeof(data));
        if (ggml_backend_sched_graph_compute(w->sched, w->gf) != GGML_STATUS_SUCCESS) return 1;
    }
    return 0;
}

static void work_free(work *w) {
    ggml_backend_sched_free(w->sched);
    ggml_free(w->ctx);
    ggml_backend_free(w->cpu);
}

int main(int argc, char **argv) {
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "compute") == 0) {
        work w;
        if (work_init(&w, argv[3]) != 0 || work_run(&w, atoi(argv[2]), argc == 5 ? atoi(argv[4]) : 0) != 0) return 1;
        work_free(&w);
        return 0;
    }
    if (argc != 2 || strcmp(argv[1], "fork") != 0) {
        fprintf(stderr, "usage: fork_exec compute N NAME [US] | fork\n");
        return 2;
    }
    work parent;
    if (work_init(&parent, "before_fork") != 0 || work_run(&parent, 5, 0) != 0) return 1;
    pid_t child = fork();
    if (child < 0) return perror("fork"), 1;
    if (child == 0) {
        work w;
        if (work_init(&w, "in_child") != 0 || work_run(&w, 7, 0) != 0) _exit(1);
        work_free(&w);
        exit(0);
    }
    work after;
    if (work_init(&after, "after_fork") != 0 || work_run(&after, 3, 0) != 0) return 1;
    int status = 0;
    if (waitpid(child, &status, 0) != child) return perror("waitpid"), 1;
    work_free(&after);
    work_free(&parent);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
