"""Every window test runs on both paths of the window manager: incremental and general scan."""

from __future__ import annotations

import pytest

from squall.windows import manager


@pytest.fixture(autouse=True, params=[True, False], ids=["incremental", "scan"])
def window_path(request, monkeypatch):
    monkeypatch.setattr(manager, "INCREMENTAL", request.param)
    return request.param
