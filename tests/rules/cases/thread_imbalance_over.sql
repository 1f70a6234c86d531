-- fires: thread_imbalance
-- The barrier after each MUL_MAT 2.7 ms of 52.7 ms recorded: 5.12%, over the 5% threshold.
UPDATE events SET duration_ns = 2700000 WHERE name = 'cpu_barrier';
