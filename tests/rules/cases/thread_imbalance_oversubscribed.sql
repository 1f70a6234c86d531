-- fires: threads_oversubscribed
-- The barriers over 5% (as thread_imbalance_over) in a process with 3 threads on 2 CPUs: the waits are the
-- oversubscription's, told once, by threads_oversubscribed.
UPDATE events SET duration_ns = 2700000 WHERE name = 'cpu_barrier';
UPDATE meta SET value = '3' WHERE key = 'threads.100';
UPDATE processes_time SET n_threads = 3;
