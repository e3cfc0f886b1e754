"""Security review finding #8 (issue 44): a FileSpout position is data from a state store, not
a path. A forged position naming a file outside the followed directory is refused in one line,
and nothing is written outside the progress directory."""

from __future__ import annotations

import pytest

from squall.connectors.files import FileSpout
from squall.runtime import clock
from tests.connectors.seeking import opened


@pytest.mark.parametrize("name", ["{outside}/private.txt", "../outside/private.txt", "..",
                                  "sub/../../outside/private.txt", "/etc/passwd"])
def test_a_forged_position_outside_the_followed_directory_is_refused(tmp_path, name):
    (tmp_path / "in").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private.txt").write_text("secret\n", encoding="utf-8")
    forged = name.format(outside=outside)
    spout = FileSpout(tmp_path / "in", progress=tmp_path / "progress")
    with clock.simulation():
        opened(spout)
        with pytest.raises(ValueError) as e:
            spout.seek({forged: 0})
        spout.close()
    message = str(e.value)
    assert "\n" not in message and "not a file name of" in message and repr(forged) in message
    assert sorted(p.name for p in outside.iterdir()) == ["private.txt"]  # no .offset written there
    assert not list((tmp_path / "progress").iterdir())
