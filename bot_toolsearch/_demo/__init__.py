"""The embedded offline demo: a realistic tool catalog, a deterministic planner, token counts."""
