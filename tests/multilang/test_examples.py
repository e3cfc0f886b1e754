"""examples/multilang_word_count.py and its multilang bolts count exactly."""

from __future__ import annotations

import shutil

import pytest

from examples import multilang_word_count as example


@pytest.mark.parametrize("split", ["pystorm", "pystorm-msgpack", "node"])
def test_multilang_word_count_is_exact(split):
    if split == "node" and shutil.which("node") is None:
        pytest.skip("needs node (scripts/setup-node.sh)")
    result = example.run(split, sentences=300)
    assert result["counts"] == result["expected"]
    assert result["errors"] == []
