-- fires: small_ubatch
-- 254 tokens in 2 graphs: 127 a graph, under 128.
UPDATE batches SET n_tokens = 254, duration_ns = 120000000 WHERE batch_id = 1;
UPDATE graph_list SET batch_id = 1 WHERE graph_id <= 2;
DELETE FROM batches WHERE batch_id = 2;
