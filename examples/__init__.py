"""Example topologies (storm-starter's classics and a tour of the groupings).

Run one with ``python -m examples.word_count`` or ``python examples/word_count.py``.
"""
