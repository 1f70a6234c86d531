-- fires: cpu_contention
-- silent: below_roof peak_tensor
-- Runnable but waiting for a CPU 21% of the threads' runnable time with 2 threads on 2 CPUs: other work took them.
-- At stake: the 420 ms the two threads waited x 600 ms of graphs / 1 s of wall = 252 ms.
UPDATE thread_stats SET cpu_ns = 790000000, runq_ns = 210000000;
