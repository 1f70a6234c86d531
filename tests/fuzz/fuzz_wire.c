/* libFuzzer target: what the collector does with a ring slot's bytes, which a buggy or hostile process can fill
 * with anything: split into messages, each stored into a trace database. Nothing may crash, hang or leak. */
#include <stdint.h>
#include <stdio.h>

#include "ring.h"
#include "store.h"

static void store_one(const ggprof_msg_hdr *m, void *user) { ggprof_store_msg(user, 1, 1, m); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ggprof_store *store;
    char why[256];
    if (ggprof_store_create(&store, "", why, sizeof(why)) != 0) return 0;
    ggprof_msgs_foreach(data, size, store_one, store);
    sqlite3_close(ggprof_store_finish(store, why, sizeof(why)));
    return 0;
}
