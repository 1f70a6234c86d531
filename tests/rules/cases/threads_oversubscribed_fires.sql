-- fires: threads_oversubscribed
-- silent: below_roof peak_tensor
-- 3 threads on 2 CPUs (one over): at stake the excess threads' share of the waits, 10 ms x 1/3.
UPDATE meta SET value = '3' WHERE key = 'threads.100';
UPDATE processes_time SET n_threads = 3;
