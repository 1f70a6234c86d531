-- fires: loading
-- accounting
-- The fork 820 ms earlier: 920 ms before the first graph of a 1820 ms wall, 50.5%, over 50%.
UPDATE processes_time SET fork_ns = 180000000;
UPDATE processes SET start_ns = 180000000;
