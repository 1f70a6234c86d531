-- fires: threads_oversubscribed
-- 2 threads, 2 CPUs of affinity but a cgroup quota of 1.5 CPUs: the tighter counts; advice -t 1.
INSERT INTO meta VALUES ('cpu_quota.100', '1.5');
UPDATE processes_time SET cpu_quota = 1.5;
