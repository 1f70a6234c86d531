-- fires: small_ubatch
-- The 40-token prompt of small_ubatch_fires recorded at level graph (no op records, so no matmul times): the whole
-- shortest graph is counted, 9 x 60 ms, and the evidence says estimate=upper_bound.
UPDATE batches SET n_tokens = 40, duration_ns = 600000000 WHERE batch_id = 1;
DELETE FROM batches WHERE batch_id > 1;
UPDATE graph_list SET batch_id = 1;
DELETE FROM events WHERE type = 0;
