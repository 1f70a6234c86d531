/* ggprof calibrate: measures this CPU's memory and compute roofs and writes them as --roof-file reads them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "cli.h"
#include "outfile.h"
#include "analyzer_commands.h"

const char ggprof_usage_calibrate[] =
    "usage: ggprof calibrate " GGPROF_HELP_SYNOPSIS "\n"
    "\n"
    "Measures this machine's roofs for the roofline columns of top-ops and inefficiency and for\n"
    "'export --roofline': memory bandwidth (STREAM-style copy and triad over three large arrays of doubles,\n"
    "bytes read + written, the better of the two kept) and matrix-product throughput (C = A.B^T, N x N x N):\n"
    "F32 and F16 with ggprof's blocked kernel (AVX2+FMA+F16C where the CPU has them, F16 widened to F32 as\n"
    "ggml does, else portable C), and F32 with OpenBLAS's cblas_sgemm when libopenblas is installed (the\n"
    "BLAS backend's own kernel). Prints the figures, then the roofs, one line per backend:\n"
    "  CPU=GBPS,GFLOPS,GFLOPS_F16   (GFLOPS: the better of ggprof's F32 kernel and OpenBLAS)\n"
    "  BLAS=GBPS,GFLOPS             (when OpenBLAS was found)\n"
    GGPROF_HELP_OPTIONS
    "Takes a second or two; run it on an idle machine, as other work lowers every figure.\n";

static int parse_int(const char *opt, const char *v, long min, long max, long *out) {
    char *end;
    errno = 0;
    *out  = strtol(v, &end, 10);
    if (end == v || *end || errno || *out < min || *out > max) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "bad value '%s' for %s; expected a number from %ld to %ld", v, opt, min, max);
    }
    return 0;
}

static void write_roofs(FILE *f, const ggprof_calib_result *r) {
    double gbps = r->copy_gbps > r->triad_gbps ? r->copy_gbps : r->triad_gbps;
    double f32  = r->blas_gflops > r->f32_gflops ? r->blas_gflops : r->f32_gflops;
    fprintf(f, "CPU=%.2f,%.2f,%.2f\n", gbps, f32, r->f16_gflops);
    if (r->blas_gflops > 0) fprintf(f, "BLAS=%.2f,%.2f\n", gbps, r->blas_gflops);
}

int ggprof_cmd_calibrate(int argc, char **argv) {
    ggprof_calib_opts o = { 0 };
    const char *out = NULL, *threads = NULL, *mib = NULL, *matmul = NULL;
    const ggprof_opt opts[] = {
        { "-o", NULL, GGPROF_OPT_STRING, &out, NULL, "FILE", "also write the roofs to FILE, for --roof-file FILE" },
        { "-t", NULL, GGPROF_OPT_STRING, &threads, NULL, "THREADS",
          "threads to measure with (default: every online CPU; use the workload's -t to compare)" },
        { "-s", NULL, GGPROF_OPT_STRING, &mib, NULL, "MIB",
          "size of each bandwidth array (default 256; keep it well above the last-level cache)" },
        { "-m", NULL, GGPROF_OPT_STRING, &matmul, NULL, "N", "matrix size (default 1008, rounded up to a multiple of 24)" },
    };
    ggprof_args a = { opts, 4, NULL, 0, 0, "unknown argument '%s'; see 'ggprof calibrate --help'", 0, 0, NULL };
    if (ggprof_parse_args(argc, argv, &a)) return GGPROF_EXIT_USAGE;
    long x;
    if (threads && parse_int("-t", threads, 1, 256, &x)) return GGPROF_EXIT_USAGE;
    if (threads) o.threads = (int) x;
    if (mib && parse_int("-s", mib, 1, 16384, &x)) return GGPROF_EXIT_USAGE;
    if (mib) o.array_mib = (size_t) x;
    if (matmul && parse_int("-m", matmul, 24, 8192, &x)) return GGPROF_EXIT_USAGE;
    if (matmul) o.matmul_n = (int) x;
    /* Open the output first: a bad path should fail before a second of measuring, not after. */
    FILE *f = NULL;
    ggprof_outfile of; /* a new private file, renamed over OUT when whole (outfile.h) */
    if (out && !(f = ggprof_outfile_open(&of, out))) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "cannot write '%s': %s", out, strerror(errno));
    }
    ggprof_calib_result r;
    char why[256];
    if (ggprof_calibrate(&o, &r, why, sizeof(why)) != 0) {
        if (f) ggprof_outfile_close(&of, f, 1); /* what was at OUT stays */
        return ggprof_fail(GGPROF_EXIT_INTERNAL, "%s", why);
    }
    printf("%d thread%s; bandwidth: 3 arrays of %zu MiB, best of %d; matmul: %d^3, best of %d\n", r.threads,
           r.threads == 1 ? "" : "s", r.array_bytes >> 20, r.reps, r.matmul_n, r.reps < 3 ? r.reps : 3);
    printf("  memory  copy  %9.2f GB/s     triad %9.2f GB/s\n", r.copy_gbps, r.triad_gbps);
    printf("  matmul  F32   %9.2f GFLOP/s  ggprof blocked kernel (%s)\n", r.f32_gflops, r.kernel);
    printf("          F16   %9.2f GFLOP/s  ggprof blocked kernel (%s)\n", r.f16_gflops, r.kernel);
    if (r.blas_gflops > 0) {
        printf("          F32   %9.2f GFLOP/s  OpenBLAS cblas_sgemm (%s)\n", r.blas_gflops, r.blas_lib);
    } else {
        printf("          (no OpenBLAS found: libopenblas.so.0)\n");
    }
    printf("roofs (--roof / --roof-file format):\n");
    write_roofs(stdout, &r);
    int rc = 0;
    if (f) {
        fprintf(f, "# ggprof roofs, written by 'ggprof calibrate': BACKEND=GBPS,GFLOPS[,GFLOPS_F16]\n");
        fprintf(f, "# %d threads; copy %.2f GB/s, triad %.2f GB/s; %d^3 matmul: F32 %.2f, F16 %.2f GFLOP/s (ggprof, %s)",
                r.threads, r.copy_gbps, r.triad_gbps, r.matmul_n, r.f32_gflops, r.f16_gflops, r.kernel);
        if (r.blas_gflops > 0) fprintf(f, ", F32 %.2f GFLOP/s (OpenBLAS, %s)", r.blas_gflops, r.blas_lib);
        fprintf(f, "\n");
        write_roofs(f, &r);
        if (ggprof_outfile_close(&of, f, 0) != 0) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot write '%s': %s", out, strerror(errno));
    }
    if (fflush(stdout) != 0 || ferror(stdout)) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "writing to stdout failed");
    return rc;
}
