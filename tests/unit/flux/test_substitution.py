"""Flux's substitution: properties files, ${name}, ${name[i]}, ${ENV-NAME}; lines kept."""

from __future__ import annotations

import pytest

from squall.flux import FluxError
from squall.flux.substitution import read_properties, substitute


def test_properties_file_forms(tmp_path):
    f = tmp_path / "p.properties"
    f.write_text("# comment\n! also a comment\na=1\nb: two words\nc   spaced\n"
                 "long=first \\\n  second\n\nempty\n")
    assert read_properties(str(f)) == {"a": "1", "b": "two words", "c": "spaced",
                                       "long": "first second", "empty": ""}


def test_missing_properties_file_is_an_error(tmp_path):
    with pytest.raises(FluxError, match="cannot read the properties file"):
        read_properties(str(tmp_path / "none.properties"))


def test_substitution_keeps_lines_and_skips_comments():
    text = "a: ${x}\n# ${undefined} in a comment\nb: [${x}, ${ENV-HOME_X}]\nc: ${l[1]}\n"
    out = substitute(text, "t.yaml", {"x": "1", "l": '["p", "q"]'}, True, {"HOME_X": "/h"})
    assert out == "a: 1\n# ${undefined} in a comment\nb: [1, /h]\nc: q\n"


def test_env_variables_are_left_alone_without_the_env_filter():
    assert substitute("a: ${ENV-X}\n", "t.yaml", {"y": "1"}, False) == "a: ${ENV-X}\n"


def test_an_item_beyond_a_list_property_names_the_line():
    with pytest.raises(FluxError, match=r"t\.yaml:2: \$\{l\[5\]\}: the list has 2 item"):
        substitute("a: 1\nb: ${l[5]}\n", "t.yaml", {"l": "[1, 2]"}, False)
