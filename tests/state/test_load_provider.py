"""load_provider: the class named by topology.state.provider, or a one-line error naming the key and path."""

from __future__ import annotations

import pytest

from squall.state import StateConfigError, StateProvider, load_provider
from squall.state.local import LocalStateProvider
from squall.state.memory import InMemoryStateProvider


class NeedsArguments(StateProvider):
    def __init__(self, url):
        self.url = url

    def new_state(self, namespace, conf, context):
        raise AssertionError("not called")


@pytest.mark.parametrize("conf", [{}, {"topology.state.provider": None}])
def test_default_is_the_in_memory_provider(conf):
    assert type(load_provider(conf)) is InMemoryStateProvider


def test_a_named_provider_is_built():
    conf = {"topology.state.provider": "squall.state.local.LocalStateProvider"}
    assert type(load_provider(conf)) is LocalStateProvider


@pytest.mark.parametrize("path, message", [
    ("no_such_module.Provider", "cannot be imported: ModuleNotFoundError: No module named 'no_such_module'"),
    ("squall.state.memory.NoSuchProvider", "cannot be imported: AttributeError: "),
    ("collections.OrderedDict", "is not a squall.state.StateProvider subclass"),
    ("squall.state.memory.clear", "is not a squall.state.StateProvider subclass"),
    ("squall.state.base.StateProvider", "cannot be built without arguments: TypeError"),
    (f"{__name__}.NeedsArguments", "cannot be built without arguments: TypeError"),
    ("InMemoryStateProvider", "is not an import path"),
])
def test_errors_name_the_key_and_the_path(path, message):
    with pytest.raises(StateConfigError) as err:
        load_provider({"topology.state.provider": path})
    text = str(err.value)
    assert text.startswith(f"topology.state.provider = {path!r} ")
    assert message in text
    assert "\n" not in text


def test_a_non_string_is_rejected():
    with pytest.raises(StateConfigError, match="topology.state.provider must be an import path string"):
        load_provider({"topology.state.provider": InMemoryStateProvider})
