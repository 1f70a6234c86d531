-- fires: below_roof
-- args: --roof CPU=10,100
-- The MUL_MAT (32 MiB of F16 weights in 50 ms) against a 10 GB/s roof: far under 20% of it.
SELECT 1;
