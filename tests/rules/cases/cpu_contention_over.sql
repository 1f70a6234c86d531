-- fires: cpu_contention
-- silent: below_roof peak_tensor
-- Runnable but waiting for a CPU 21% of the threads' runnable time with 2 threads on 2 CPUs: other work took them.
-- At stake: 420 ms / 2 threads x 600 ms of graphs / 1 s of wall = 126 ms.
UPDATE thread_stats SET cpu_ns = 790000000, runq_ns = 210000000;
