-- fires: small_ubatch
-- The 40-token prompt at -ub 4 on a build with BLAS that never computed a prompt's matmul: the trace cannot tell
-- whether BLAS is faster, so the advice keeps the matmuls on the CPU: -ub 31 (2 graphs: at stake 8 graphs x the 10 ms of a graph outside its matmul).
INSERT INTO backend_list VALUES (100, 0, 1, 'BLAS', 'BLAS', 0, 1, 'OpenBLAS');
UPDATE batches SET n_tokens = 40, duration_ns = 600000000 WHERE batch_id = 1;
DELETE FROM batches WHERE batch_id > 1;
UPDATE graph_list SET batch_id = 1;
