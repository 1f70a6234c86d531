-- fires: small_ubatch
-- silent: below_roof peak_tensor
-- BLAS computed a 48-token MUL_MAT of the same weights in 40 ms, the CPU a 4-token one in 2 ms (0.5 ms a token):
-- BLAS is slower (40 ms against 24 ms for its tokens): -ub 31.
INSERT INTO backend_list VALUES (100, 0, 1, 'BLAS', 'BLAS', 0, 1, 'OpenBLAS');
UPDATE batches SET n_tokens = 40, duration_ns = 600000000 WHERE batch_id = 1;
DELETE FROM batches WHERE batch_id > 1;
UPDATE graph_list SET batch_id = 1;
INSERT INTO nodes VALUES (100, 2, 'MUL_MAT', -1, NULL, 'ffn_up-0', 0, '[4096, 48, 1, 1]', 2,
  '[[4096, 4096, 1, 1], [4096, 48, 1, 1]]', '[]', '[1, 0]', '[]', 786432, 29),
  (100, 3, 'MUL_MAT', -1, NULL, 'ffn_up-0', 0, '[4096, 4, 1, 1]', 2,
  '[[4096, 4096, 1, 1], [4096, 4, 1, 1]]', '[]', '[1, 0]', '[]', 65536, 29);
INSERT INTO events (pid, tid, type, name, timing, backend_id, sched_id, graph_id, split_id, node_index, node_id,
  fused_index, fused_node_id, start_ns, duration_ns, bytes, wait_ns, extra) VALUES
  (100, 100, 0, 'MUL_MAT', 3, 1, 0, 1, 0, 1, 2, -1, 0, 1100000000, 40000000, 0, NULL, NULL),
  (100, 100, 0, 'MUL_MAT', 2, 0, 0, 2, 0, 1, 3, -1, 0, 1160000000, 2000000, 0, NULL, NULL);
-- the graphs' own MUL_MAT shortened so that each graph's ops fit in its 60 ms: 10 ms outside the matmuls, at stake
UPDATE events SET duration_ns = 50000000 - (SELECT e.duration_ns FROM events e WHERE e.graph_id = events.graph_id
  AND e.node_id IN (2, 3)) WHERE name = 'MUL_MAT' AND node_id = 1 AND graph_id IN (1, 2);
