-- fires: small_ubatch
-- 96 tokens in 2 graphs (48 a graph) on a build with BLAS that the trace cannot compare with the CPU: a ubatch of
-- 31 would be smaller, so the advice is a build without BLAS (change {}), its stake an upper bound (-ub 512's).
INSERT INTO backend_list VALUES (100, 0, 1, 'BLAS', 'BLAS', 0, 1, 'OpenBLAS');
UPDATE batches SET n_tokens = 96, duration_ns = 120000000 WHERE batch_id = 1;
UPDATE graph_list SET batch_id = 1 WHERE graph_id <= 2;
DELETE FROM batches WHERE batch_id = 2;
