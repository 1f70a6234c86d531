-- fires: graph_build
-- accounting
-- Each llama_decode starting 6.8 ms before its graph: 6.8 of 66.8 ms, 10.2%, over 10%.
UPDATE graph_list SET start_ns = 1100000000 + (graph_id - 1) * 70000000;
UPDATE split_list SET start_ns = 1100000000 + (graph_id - 1) * 70000000;
UPDATE events SET start_ns = start_ns + (graph_id - 1) * 10000000;
UPDATE batches SET start_ns = 1093200000 + (batch_id - 1) * 70000000, duration_ns = 66800000;
