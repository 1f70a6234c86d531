/* Which layer and which model block a record belongs to, read from its tensor's name: the rule the model's pass
 * (model.c), the views (views.c) and memory (memory.c) share. Rules in docs/rollups-and-diff.md. */
#ifndef GGPROF_LAYER_RULE_H
#define GGPROF_LAYER_RULE_H

/* The layer a tensor name belongs to (llama.cpp's "name-IL", GGUF's "blk.IL.", the KV cache's
 * "cache_k_lIL"), or -1 when the name carries none. */
int ggprof_layer_of(const char *tensor_name);

/* The model block of a record: "attention", "ffn", "moe", "norm", "input", "output", "other" for OP
 * records (type 0), "copy" for COPY (1), "sync" for SYNC (2). Rules in docs/rollups-and-diff.md. */
const char *ggprof_block_of(int type, const char *op, const char *tensor_name);

#endif
