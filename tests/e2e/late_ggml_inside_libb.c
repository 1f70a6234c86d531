/* late_ggml_inside_libb.c: the code of libb.so, a second object that calls into liba.so's ggml through its own PLT
 * (tests/e2e/late_ggml_inside.sh): loaded while another thread computes graphs in liba.so, its first call is where
 * the engine meets ggml, finds it inside liba.so and patches liba.so's entries. */
#include "ggml-backend.h"
#include "ggml-cpu.h"

int  libb_probe(void);
void libb_release(void);

static ggml_backend_t g_backend;

/* Makes a CPU backend, kept until libb_release (freed now, its address could be the next one liba.so makes): 0, or
 * -1 when none could be made. */
int libb_probe(void) {
    g_backend = ggml_backend_cpu_init();
    return g_backend ? 0 : -1;
}

void libb_release(void) {
    if (g_backend) ggml_backend_free(g_backend);
    g_backend = NULL;
}
