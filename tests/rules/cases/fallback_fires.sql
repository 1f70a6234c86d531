-- fires: fallback
-- The MUL_MAT ran on the CPU where the scheduler preferred Vulkan0, its weights in host memory: -ngl 99.
INSERT INTO backend_list VALUES (100, 0, 1, 'Vulkan0', 'Vulkan0', 2, 0, 'lavapipe');
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 10)
INSERT INTO node_placements SELECT 100, 0, i, 0, 1, 0, 1, 'weights_on_host', '[]' FROM g;
