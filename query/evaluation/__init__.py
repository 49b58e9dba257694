"""The evaluation harness: the paper's metrics, its baselines in the same harness, benchmarks."""
