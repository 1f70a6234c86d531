-- fires: small_ubatch
-- A 40-token prompt in the 10 graphs (-ub 4), no BLAS: advice -ub 512 -b 512; at stake 9 graphs x the 10 ms of a
-- graph outside its 50 ms matmul.
UPDATE batches SET n_tokens = 40, duration_ns = 600000000 WHERE batch_id = 1;
DELETE FROM batches WHERE batch_id > 1;
UPDATE graph_list SET batch_id = 1;
