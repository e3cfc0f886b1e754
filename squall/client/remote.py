"""``submit_topology(name, conf, topology)``: submit to Nimbus from Python (API.md "Running").

The same upload as ``squall submit``: the user's loaded modules zipped as the code, the
topology pickled with them by value. Nimbus is the one ``conf["squall.nimbus.url"]`` names,
else ``$SQUALL_NIMBUS``, else http://127.0.0.1:6627; the token comes from ``$SQUALL_TOKEN``
or the token file, as for the command.
"""

from __future__ import annotations

import base64

from squall.api.errors import AlreadyAliveError, InvalidTopologyError, TopologyStartError
from squall.api.topology import StormTopology
from squall.client.exits import CliError, ExitCode
from squall.client.loader import package_code, pickle_topology
from squall.client.nimbus import NimbusClient, nimbus_urls, read_token
from squall.runtime.submission import check_name, prepare_conf

NIMBUS_URL = "squall.nimbus.url"


def submit_topology(name: str, conf: dict | None, topology: StormTopology, *,
                    inactive: bool = False, timeout: float = 900.0) -> dict:
    """Submit ``topology`` as ``name``; returns its summary once every worker runs.

    ``inactive``: spouts opened but no ``next_tuple`` until ``squall activate NAME``
    (Storm's INACTIVE initial status; ``squall submit --inactive``).

    Raises ``InvalidTopologyError`` for a topology or configuration either side refuses,
    ``AlreadyAliveError`` when the name is taken, ``TopologyStartError`` when it does not
    start, and ``ConnectionError`` when no Nimbus answers.
    """
    check_name(name)
    conf = dict(conf or {})
    if inactive:
        conf["squall.topology.start.inactive"] = True
    prepare_conf(conf, topology)
    client = NimbusClient(nimbus_urls(conf.get(NIMBUS_URL)), read_token(None))
    code, modules = package_code()
    body = {"name": name, "conf": conf, "code": base64.b64encode(code).decode(),
            "topology": base64.b64encode(pickle_topology(topology, modules)).decode()}
    try:
        return client.post("/topologies", body, timeout=timeout)
    except CliError as e:
        if e.code == ExitCode.CONFLICT:
            raise AlreadyAliveError(str(e)) from None
        if e.code == ExitCode.UNREACHABLE:
            raise ConnectionError(str(e)) from None
        if "invalid" in str(e):
            raise InvalidTopologyError(str(e)) from None
        raise TopologyStartError(str(e)) from None
