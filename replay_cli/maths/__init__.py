"""The maths of one chunk, with no knowledge of reports or the CLI: the time-efficiency
shaping (both semantics), per-group reductions, NeMo-RL GRPO (float32 emulation and exact
float64), the peer estimators, dynamic-sampling filters, the chunk's input arrays and every
threshold the report judges by."""
