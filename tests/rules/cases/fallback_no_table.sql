-- fires: none
-- silent: fallback below_roof peak_tensor
-- A trace without node_placements (older than placement): fallback is silent and report --verbose says why.
DROP TABLE node_placements;
