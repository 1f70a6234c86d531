-- fires: host_gap
-- accounting
-- Graphs 72 ms apart: 9 gaps of 12 ms, 10.8% of the wall, over 10%.
UPDATE graph_list SET start_ns = 1100000000 + (graph_id - 1) * 72000000;
UPDATE batches SET start_ns = 1100000000 + (batch_id - 1) * 72000000;
UPDATE split_list SET start_ns = 1100000000 + (graph_id - 1) * 72000000;
UPDATE events SET start_ns = start_ns + (graph_id - 1) * 12000000;
