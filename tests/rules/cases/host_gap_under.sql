-- fires: none
-- Graphs (and their llama_decode calls) 71 ms apart: 9 gaps of 11 ms, 9.9% of the 1 s wall, under 10%.
UPDATE graph_list SET start_ns = 1100000000 + (graph_id - 1) * 71000000;
UPDATE batches SET start_ns = 1100000000 + (batch_id - 1) * 71000000;
UPDATE split_list SET start_ns = 1100000000 + (graph_id - 1) * 71000000;
UPDATE events SET start_ns = start_ns + (graph_id - 1) * 11000000;
