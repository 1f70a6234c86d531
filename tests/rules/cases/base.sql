-- fires: none
-- accounting
-- silent: below_roof
-- The base trace alone: nothing stands out; below_roof has no roof to read.
SELECT 1;
