"""onsei benchmarks: every row is a ratio measured side by side in one run."""
