-- fires: copies
-- A copy into each graph before its MUL_MAT, 6100000 ns: 61 of 600 ms of graphs, over 10%.
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 10)
INSERT INTO events (pid, tid, type, name, timing, backend_id, sched_id, graph_id, split_id, node_index, node_id,
  fused_index, fused_node_id, start_ns, duration_ns, bytes, wait_ns, extra)
  SELECT 100, 100, 1, 'COPY', 1, 0, 0, i, 0, -1, NULL, -1, 0, 1151000000 + (i - 1) * 60000000, 6100000, 1048576, NULL,
  'inp_embd (copy)' FROM g;
