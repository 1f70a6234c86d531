/* Writes a Q4_0 copy of a GGUF model with llama.cpp's own quantizer, for the quantized sample trace. */
#include <stdio.h>
#include <stdlib.h>

#include "llama.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: quantize IN.gguf OUT.gguf\n");
        return 2;
    }
    struct llama_model_quantize_params p = llama_model_quantize_default_params();
    p.ftype   = LLAMA_FTYPE_MOSTLY_Q4_0;
    p.nthread = 1;
    uint32_t rc = llama_model_quantize(argv[1], argv[2], &p);
    if (rc != 0) fprintf(stderr, "quantize: llama_model_quantize('%s') failed (%u)\n", argv[1], rc);
    return rc ? 1 : 0;
}
