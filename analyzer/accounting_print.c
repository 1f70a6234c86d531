/* The accounting as JSON (report --format json, the HTML page) and as report's "Where the time went". */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "accounting.h"
#include "intervals.h"
#include "v3_format.h"

void ggprof_accounting_json(FILE *out, const ggprof_accounting *a, const char *indent, unsigned json_flags) {
    fputc('[', out);
    for (size_t i = 0; i < a->n_procs; i++) {
        const ggprof_acc_proc *p = &a->procs[i];
        fprintf(out, "%s\n%s  {\"pid\": %d, \"wall_ns\": %" PRId64 ", \"start_known\": %s, \"categories\": {", i ? "," : "",
                indent, p->pid, p->wall_ns, p->start_known ? "true" : "false");
        for (size_t k = 0; k < p->n_cats; k++) {
            fputs(k ? ", " : "", out);
            ggprof_json_put(out, p->cats[k].name, json_flags);
            fprintf(out, ": %" PRId64, p->cats[k].ns);
        }
        fprintf(out, "},\n%s   \"phases\": {\"prompt_ns\": %" PRId64 ", \"prompt_tokens\": %" PRId64 ", \"prompt_batches\": %" PRId64
                ", \"generation_ns\": %" PRId64 ", \"generation_runs\": %" PRId64 ", \"decode_ns\": %" PRId64
                ", \"graphs_ns\": %" PRId64 ", \"graphs\": %" PRId64 ", \"setup_measured\": %s", indent, p->prompt_ns,
                p->n_prompt_tokens, p->n_prompt_batches, p->generation_ns, p->n_gen_batches, p->batch_ns, p->graphs_ns,
                p->n_graphs, p->setup_measured ? "true" : "false");
        const char *const llama_names[2] = { "llama_load_ns", "llama_total_ns" };
        const int64_t     llama_ns[2]    = { p->llama_load_ns, p->llama_total_ns };
        for (int k = 0; k < 2; k++) {
            if (llama_ns[k] >= 0) fprintf(out, ", \"%s\": %" PRId64, llama_names[k], llama_ns[k]);
            else fprintf(out, ", \"%s\": null", llama_names[k]);
        }
        fprintf(out, "},\n");
        fprintf(out, "%s   \"end_known\": %s, \"tid\": %d, \"page_faults\": {\"minor\": %" PRId64 ", \"major\": %" PRId64 "},"
                " \"weights\": {\"buffers\": %" PRId64 ", \"bytes\": %" PRId64 "},\n", indent, p->exit_known ? "true" : "false",
                p->tid, p->minflt, p->majflt, p->n_weights, p->weights_bytes);
        if (p->first_token_ns) {
            const ggprof_acc_span *t = &p->ttft;
            fprintf(out, "%s   \"ttft\": {\"ns\": %" PRId64 ", \"startup_ns\": %" PRId64 ", \"loading_ns\": %" PRId64
                    ", \"context_setup_ns\": %" PRId64 ", \"compute_ns\": %" PRId64 ", \"graph_build_ns\": %" PRId64
                    ", \"host_ns\": %" PRId64 ", \"idle_ns\": %" PRId64 "},\n", indent,
                    pos(sat_sub(p->first_token_ns, p->start_ns)), p->before_setup_ns, p->loading_ns, p->context_ns,
                    t->compute_ns, t->graph_build_ns, t->host_ns, t->idle_ns);
        } else {
            fprintf(out, "%s   \"ttft\": null,\n", indent);
        }
        if (p->n_gen_batches) {
            const ggprof_acc_span *t = &p->gen;
            int64_t n = p->n_gen_batches;
            fprintf(out, "%s   \"per_token\": {\"tokens\": %" PRId64 ", \"ns\": %" PRId64 ", \"compute_ns\": %" PRId64
                    ", \"graph_build_ns\": %" PRId64 ", \"host_ns\": %" PRId64 ", \"idle_ns\": %" PRId64 "}", indent, n,
                    t->ns / n, t->compute_ns / n, t->graph_build_ns / n, t->host_ns / n, t->idle_ns / n);
        } else {
            fprintf(out, "%s   \"per_token\": null", indent);
        }
        fprintf(out, ",\n%s   \"requests\": ", indent);
        ggprof_request_times_json(out, &p->requests);
        fputc('}', out);
    }
    fprintf(out, "%s%s]", a->n_procs ? "\n" : "", a->n_procs ? indent : "");
}

static double ms(int64_t ns) { return (double) ns / 1e6; }

void ggprof_accounting_print(FILE *out, const ggprof_accounting *a) {
    if (!a->n_procs) return;
    fprintf(out, "=== Where the time went ===\n");
    for (size_t i = 0; i < a->n_procs; i++) {
        const ggprof_acc_proc *p = &a->procs[i];
        fprintf(out, "  pid %d: %.3f ms, %s to %s\n", p->pid, ms(p->wall_ns),
                p->start_known ? "its start" : "its first record", p->exit_known ? "its exit (measured by record)"
                                                                                  : "its last record");
        for (size_t k = 0; k < p->n_cats; k++) {
            if (!p->cats[k].ns) continue;
            char safe[96];
            fprintf(out, "    %-24s %12.3f ms %6.1f%%", ggprof_text_safe(p->cats[k].name, safe, sizeof(safe)),
                    ms(p->cats[k].ns), p->wall_ns ? 100.0 * (double) p->cats[k].ns / (double) p->wall_ns : 0.0);
            if (strcmp(p->cats[k].name, GGPROF_ACC_LOADING) == 0 && p->n_weights) {
                fprintf(out, "  (%" PRId64 " weights buffer%s, %.1f MiB, %.0f MB/s at least)", p->n_weights,
                        p->n_weights == 1 ? "" : "s", (double) p->weights_bytes / (1 << 20),
                        (double) p->weights_bytes / 1e6 / ((double) p->cats[k].ns / 1e9));
            }
            fputc('\n', out);
        }
        if (p->minflt >= 0) fprintf(out, "    page faults: %" PRId64 " minor, %" PRId64 " major\n", p->minflt, p->majflt);
        if (p->n_prompt_batches || p->n_gen_batches) {
            fprintf(out, "    prompt %.3f ms (%" PRId64 " tokens in %" PRId64 " llama_decode), generation %.3f ms (%" PRId64
                    " runs)\n", ms(p->prompt_ns), p->n_prompt_tokens, p->n_prompt_batches, ms(p->generation_ns),
                    p->n_gen_batches);
        }
        if (p->llama_load_ns >= 0 || p->llama_total_ns >= 0) {
            fprintf(out, "    llama.cpp's own counters, as it computes them:");
            if (p->llama_load_ns >= 0) {
                fprintf(out, " load time %.3f ms (from its last perf reset, else the model load's start, to the end of"
                        " the first llama_decode)", ms(p->llama_load_ns));
            }
            if (p->llama_total_ns >= 0) fprintf(out, "%s total time %.3f ms", p->llama_load_ns >= 0 ? "," : "", ms(p->llama_total_ns));
            fputc('\n', out);
        }
        if (p->first_token_ns) {
            const ggprof_acc_span *t = &p->ttft;
            fprintf(out, "    time to first token %.3f ms: startup %.3f, loading %.3f, context set-up %.3f, prompt graphs"
                    " %.3f, graph build %.3f, host %.3f, idle %.3f\n", ms(pos(sat_sub(p->first_token_ns, p->start_ns))),
                    ms(p->before_setup_ns), ms(p->loading_ns), ms(p->context_ns), ms(t->compute_ns), ms(t->graph_build_ns),
                    ms(t->host_ns), ms(t->idle_ns));
        }
        if (p->n_gen_batches) {
            const ggprof_acc_span *t = &p->gen;
            int64_t n = p->n_gen_batches;
            fprintf(out, "    per generated token %.3f ms: graphs %.3f, graph build %.3f, host %.3f, idle %.3f\n",
                    ms(t->ns / n), ms(t->compute_ns / n), ms(t->graph_build_ns / n), ms(t->host_ns / n), ms(t->idle_ns / n));
        }
        ggprof_request_times_print(out, &p->requests, p->start_ns, 10, "    ");
    }
    fputc('\n', out);
}
