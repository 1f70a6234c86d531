/* The environment variables a rerun of a recorded command needs (record stores them in the trace's meta `env`,
 * `ggprof try` sets them again): those that change what ggml and its BLAS and GPU runtimes do, and where programs
 * and libraries are found; never the whole environment, which holds secrets. */
#ifndef GGPROF_RERUN_ENV_H
#define GGPROF_RERUN_ENV_H

#include <string.h>

/* name (without "=value") is kept: one of the prefixes or names below, and nothing that reads as a secret (a
 * LLAMA_API_KEY or an HF_TOKEN is not the trace's to carry). */
static inline int ggprof_rerun_env_kept(const char *name, size_t len) {
    static const char *const prefixes[] = { "GGML_", "LLAMA_", "WHISPER_", "OMP_", "GOMP_", "KMP_", "OPENBLAS_",
                                            "MKL_", "BLIS_", "CUDA_", "HIP_", "ROCR_", "VK_" };
    static const char *const names[]    = { "PATH", "LD_LIBRARY_PATH", "LD_PRELOAD" };
    static const char *const secrets[]  = { "KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH" };
    int kept = 0;
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]) && !kept; i++) {
        size_t n = strlen(prefixes[i]);
        kept = len > n && strncmp(name, prefixes[i], n) == 0;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !kept; i++) {
        kept = len == strlen(names[i]) && strncmp(name, names[i], len) == 0;
    }
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]) && kept; i++) {
        size_t n = strlen(secrets[i]);
        for (size_t k = 0; k + n <= len && kept; k++) kept = strncmp(name + k, secrets[i], n) != 0;
    }
    return kept;
}

#endif
