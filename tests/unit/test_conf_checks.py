"""The table of configuration checks: values Storm's own configs use must pass it."""

import pytest

from squall.api.conf_checks import check_setting
from squall.api.errors import InvalidTopologyError

KEY = "topology.state.provider.config"


@pytest.mark.parametrize("value", [
    {"host": "127.0.0.1", "port": 6379},
    '{"jedisPoolConfig": {"host": "localhost", "port": 6379}}',  # as Storm's storm.yaml writes it
])
def test_a_provider_config_is_a_mapping_or_a_json_object_in_a_string(value: object) -> None:
    check_setting(KEY, value)


@pytest.mark.parametrize("value", ["not json", "[1, 2]", 3, ["host"]])
def test_a_provider_config_that_is_no_object_is_refused_naming_the_key(value: object) -> None:
    with pytest.raises(InvalidTopologyError, match=KEY):
        check_setting(KEY, value)


@pytest.mark.parametrize("value", ["at_least_once", "exactly_once"])
def test_the_two_guarantees_pass(value: str) -> None:
    check_setting("topology.guarantee", value)


@pytest.mark.parametrize("value", ["exactly-once", "EXACTLY_ONCE", None, 1, ["exactly_once"]])
def test_any_other_guarantee_is_one_line_naming_the_key(value: object) -> None:
    with pytest.raises(InvalidTopologyError,
                       match="topology.guarantee must be 'at_least_once' or 'exactly_once'"):
        check_setting("topology.guarantee", value)
