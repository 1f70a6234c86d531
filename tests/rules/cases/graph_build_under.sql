-- fires: none
-- Graphs 70 ms apart, each llama_decode starting 6.5 ms before its graph: 6.5 of 66.5 ms, 9.8%, under 10%.
UPDATE graph_list SET start_ns = 1100000000 + (graph_id - 1) * 70000000;
UPDATE split_list SET start_ns = 1100000000 + (graph_id - 1) * 70000000;
UPDATE events SET start_ns = start_ns + (graph_id - 1) * 10000000;
UPDATE batches SET start_ns = 1093500000 + (batch_id - 1) * 70000000, duration_ns = 66500000;
