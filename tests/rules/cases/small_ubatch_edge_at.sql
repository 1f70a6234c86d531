-- fires: none
-- 256 tokens in 2 graphs: 128 a graph, not under 128.
UPDATE batches SET n_tokens = 256, duration_ns = 120000000 WHERE batch_id = 1;
UPDATE graph_list SET batch_id = 1 WHERE graph_id <= 2;
DELETE FROM batches WHERE batch_id = 2;
