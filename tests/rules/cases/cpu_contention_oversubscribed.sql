-- fires: threads_oversubscribed
-- The same wait with 4 threads on 2 CPUs: the process's own threads explain it (threads_oversubscribed), not others.
UPDATE thread_stats SET cpu_ns = 790000000, runq_ns = 210000000;
UPDATE meta SET value = '4' WHERE key = 'threads.100';
UPDATE processes_time SET n_threads = 4;
