-- fires: none
-- Over 50% before the first graph, but the weights buffers hold 1 byte under 1 MiB: nothing to load faster.
UPDATE processes_time SET fork_ns = 180000000;
UPDATE processes SET start_ns = 180000000;
INSERT INTO buffer_list VALUES (100, 1, 4096, 'CPU', NULL, 1, 0, 1, 1048575, 32, 1050000000, NULL);
