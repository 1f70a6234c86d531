-- fires: none
-- Runnable but waiting for a CPU 19% of the threads' runnable time (2 threads on 2 CPUs): under 20%.
UPDATE thread_stats SET cpu_ns = 810000000, runq_ns = 190000000;
