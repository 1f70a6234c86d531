-- fires: cpu_contention
-- silent: below_roof peak_tensor
-- The barrier waits of thread_imbalance_over (5.12% of the recorded time), while the threads also waited runnable
-- for a CPU 21% of their runnable time with 2 threads on 2 CPUs: other work took the cores, so the waits are
-- cpu_contention's and thread_imbalance, whose advice (-t, the physical cores) would not remove them, is silent.
UPDATE events SET duration_ns = 2700000 WHERE name = 'cpu_barrier';
UPDATE thread_stats SET cpu_ns = 790000000, runq_ns = 210000000;
