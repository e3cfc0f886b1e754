"""Talking to Nimbus from Python: its HTTP client, the code packer and ``submit_topology``.

Below the command line, which uses it, so that ``squall.submit_topology`` (the package's
face) never reaches up into the CLI. The exit codes of ``exits`` are the client's error
categories, and the command's exit status.
"""
