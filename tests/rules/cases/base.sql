-- fires: none
-- accounting
-- silent: below_roof peak_tensor
-- The base trace alone: nothing stands out; below_roof has no roof to read.
SELECT 1;
