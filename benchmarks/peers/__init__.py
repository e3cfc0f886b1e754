"""Benchmark runners for squall's peers, each run in its own virtualenv.

Every runner is started as ``python -m benchmarks.peers.<peer> SPEC`` from the repository
root, where ``SPEC`` is a JSON object with a list of cases (see ``_common.read_spec``); it
prints one result line per case (``_common.emit_row``). Runners import nothing from this
repository but ``_common`` and ``_measure``, which need the standard library only.
"""
