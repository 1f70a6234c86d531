-- fires: none
-- 2 threads on 2 CPUs (the base, stated): not oversubscribed, whatever the waits.
UPDATE events SET duration_ns = 2000000 WHERE name = 'cpu_barrier';
