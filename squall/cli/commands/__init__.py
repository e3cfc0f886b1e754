"""One module per ``squall`` command."""
