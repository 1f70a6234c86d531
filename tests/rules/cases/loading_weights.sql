-- fires: loading
-- The same with 1 MiB of weights: it fires.
UPDATE processes_time SET fork_ns = 180000000;
UPDATE processes SET start_ns = 180000000;
INSERT INTO buffer_list VALUES (100, 1, 4096, 'CPU', NULL, 1, 0, 1, 1048576, 32, 1050000000, NULL);
