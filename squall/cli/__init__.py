"""The ``squall`` command: Storm's verbs, one module per command under ``commands``."""
