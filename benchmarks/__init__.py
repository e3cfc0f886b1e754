"""Benchmarks: ``python -m benchmarks [--quick]`` prints a table and writes results/latest.json."""
