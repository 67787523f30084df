"""What the numbers mean for a user: findings in words, the frontier and highlights, the top groups
per config. Reads only the report's tables, so the engine and the report both stand above it."""
