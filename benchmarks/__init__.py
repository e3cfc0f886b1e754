"""squall's benchmarks: ``python -m benchmarks [--quick|--full] [--workloads ...] [--systems ...]``.

Runs the workloads of ``benchmarks.workloads`` on squall (``LocalCluster``, ``SparkCluster``)
and on its peers (``benchmarks.peers``, each in its own virtualenv under ``.bench/``),
prints a table with squall's ratio to each, and writes ``benchmarks/results/`` (rows,
metadata, charts). See ``docs/performance.md``.
"""
