"""Rollout tables in: load and validate the canonical table (spec §2), value checks, chunks of
whole steps, and the synthetic SWE-like generator."""
