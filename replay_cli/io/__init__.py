"""Readers and writers for rollout tables and reports."""
