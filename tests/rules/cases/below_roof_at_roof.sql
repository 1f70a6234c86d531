-- fires: none
-- args: --roof CPU=1,100
-- The same against a 1 GB/s roof: at it.
SELECT 1;
