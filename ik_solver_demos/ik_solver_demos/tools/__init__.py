"""Programs around the package: the demo, benchmarks, the method figure, process helpers."""
