-- The trace every case starts from (tests/rules/README.md): one llama.cpp-like process, pid 100, from its fork at
-- 1 s to its exit at 2 s (times from 1 s: a fork at 0 reads as unknown), 2 compute threads on 2 CPUs, 10 one-token llama_decode calls, each computing one graph of
-- 60 ms (one CPU split: a MUL_MAT of 50 ms, the barrier after it 1 ms), back to back from 1.1 s. No rule fires.
-- Times in ns. A case's .sql runs after this, changing what its rule reads.
INSERT INTO meta VALUES ('command', 'llama-completion -m model.gguf -p hi -n 10'), ('level', 'op'),
  ('threads.100', '2'), ('cpus_allowed.100', '2');
INSERT INTO processes VALUES (100, 1, 'llama-completion', '0.4.0', '', 'libggml-base.so', 1000000000);
INSERT INTO processes_time VALUES (100, 1, 'wait4', 1000000000, 2000000000, 0, 1500000000, 20000000, 1000, 0, 50, 10, 100000,
  '0-1', 2, NULL, 2);
INSERT INTO thread_stats VALUES (100, 100, 'llama-completion', 1000000000, 2000000000, 800000000, 10000000, 500, NULL),
  (100, 101, 'llama-completion', 1100000000, 1700000000, 590000000, 10000000, 400, NULL);
INSERT INTO backend_list VALUES (100, 0, 0, 'CPU', 'CPU', 0, 1, 'CPU');
INSERT INTO nodes VALUES (100, 1, 'MUL_MAT', -1, NULL, 'ffn_up-0', 0, '[4096, 1, 1, 1]', 2,
  '[[4096, 4096, 1, 1], [4096, 1, 1, 1]]', '[[2, 8192, 33554432, 33554432], [4, 16384, 16384, 16384]]', '[1, 0]',
  '[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]', 16384, 29);
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 10)
INSERT INTO batches SELECT 100, 100, i, 'llama_decode', 0, 1100000000 + (i - 1) * 60000000, 60000000, 1, 1, 1 FROM g;
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 10)
INSERT INTO graph_list SELECT 100, i, 0, 1100000000 + (i - 1) * 60000000, 60000000, 1, 1, i FROM g;
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 10)
INSERT INTO split_list SELECT 100, i, 0, 0, 0, 1100000000 + (i - 1) * 60000000, 60000000, 1, 0, 1, 1, 1, NULL FROM g;
-- each graph: the MUL_MAT (thread 0, timing 2: CPU ticks) and the barrier after it
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 10)
INSERT INTO events (pid, tid, type, name, timing, backend_id, sched_id, graph_id, split_id, node_index, node_id,
  fused_index, fused_node_id, start_ns, duration_ns, bytes, wait_ns, extra)
  SELECT 100, 100, 0, 'MUL_MAT', 2, 0, 0, i, 0, 0, 1, -1, 0, 1100000000 + (i - 1) * 60000000, 50000000, 33554432, 0,
  NULL FROM g
  UNION ALL SELECT 100, 100, 2, 'cpu_barrier', 2, 0, 0, i, 0, 0, NULL, -1, 0, 1150000000 + (i - 1) * 60000000,
  1000000, 0, NULL, NULL FROM g ORDER BY 14;
