-- Search plans depend on the table's statistics: without them (a fresh store that just took a
-- burst of writes or an import) the planner guesses one row per scope and nests loops over the
-- whole scope, 4x slower at 300 memories and worse as it grows. Analyze after 2% changes
-- instead of the default 10%.
ALTER TABLE memories SET (autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 100);
