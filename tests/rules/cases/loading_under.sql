-- fires: none
-- The fork 780 ms earlier: 880 ms before the first graph of a 1780 ms wall, 49.4%, under 50%.
UPDATE processes_time SET fork_ns = 220000000;
UPDATE processes SET start_ns = 220000000;
