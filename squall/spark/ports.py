"""Fixed ports for squall's sockets, so that a firewall between hosts can be opened for them.

Each of squall's listening sockets takes its port from a setting: ``0`` (the default) is
any free port (the operating system's choice for HTTP, 49152-65535 for ZeroMQ), a number
is that port, and ``"LOW-HIGH"`` (or ``[LOW, HIGH]``) is the first free port of that
inclusive range: several topology masters on one host, or several workers on one
executor host, each need one. A comma-separated list (``"6700,6701,6705"``, each part a
port or a range) is the first free port of the list, in its order: Storm's
``supervisor.slots.ports`` in the cluster file becomes ``squall.spark.worker.port`` so
(``squall.nimbus.clusterconf``). A setting with no free port left is an error naming the
setting and its ports.

=====================================  =============================================
``squall.spark.master.port``           the topology master's ZeroMQ socket (workers
                                       register and heartbeat to it)
``squall.spark.master.control.port``   the topology master's control endpoint (HTTP,
                                       Nimbus drives the topology through it)
``squall.spark.worker.port``           each worker's ZeroMQ receive socket (tuples
                                       from the other workers)
=====================================  =============================================
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
ZMQ_RANDOM = (49152, 65535)  # pyzmq's bind_to_random_port range


class PortRangeError(ValueError):
    """A port setting that is not a port, or a range with no free port; the message names it."""


def port_range(value: Any, key: str) -> tuple[int, int] | None:
    """(low, high) of a port setting, or None for any free port.

    >>> port_range("6700-6703", "squall.spark.worker.port")
    (6700, 6703)
    >>> port_range(6627, "k"), port_range(0, "k"), port_range(None, "k")
    ((6627, 6627), None, None)
    """
    if value is None or value == 0 or value == "0" or value == "":
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, int):
            low = high = value
        elif isinstance(value, (list, tuple)) and len(value) == 2:
            low, high = int(value[0]), int(value[1])
        elif isinstance(value, str):
            first, sep, last = value.strip().partition("-")
            low = int(first)
            high = int(last) if sep else low
        else:
            raise ValueError
    except (TypeError, ValueError):
        raise PortRangeError(f"{key} must be a port, 'LOW-HIGH' or 0 (any free port), got {value!r}") \
            from None
    if not 1 <= low <= high <= 65535:
        raise PortRangeError(f"{key} must lie in 1-65535 with LOW <= HIGH, got {value!r}")
    return low, high


def port_list(value: Any, key: str) -> list[int] | None:
    """The ports a setting allows, in the order they are tried (None: any free port).

    >>> port_list("6700,6702-6703", "squall.spark.worker.port")
    [6700, 6702, 6703]
    >>> port_list("6700-6701", "k"), port_list(0, "k")
    ([6700, 6701], None)
    """
    if isinstance(value, str) and "," in value:
        parts = [p for p in value.split(",") if p.strip()]
        if not parts:
            raise PortRangeError(f"{key} must be a port, 'LOW-HIGH', a comma-separated list of them "
                                 f"or 0 (any free port), got {value!r}")
        ports: list[int] = []
        for part in parts:
            span = port_range(part, key)
            if span is None:
                raise PortRangeError(f"{key}: 0 (any free port) cannot be part of a list, got {value!r}")
            ports.extend(p for p in range(span[0], span[1] + 1) if p not in ports)
        return ports
    span = port_range(value, key)
    return None if span is None else list(range(span[0], span[1] + 1))


def _ports_text(ports: list[int]) -> str:
    if ports == list(range(ports[0], ports[-1] + 1)):
        return f"{ports[0]}-{ports[-1]}"
    return ",".join(str(p) for p in ports)


def bind_first_free(bind: Callable[[int], T], value: Any, key: str, where: str,
                    in_use: Callable[[Exception], bool]) -> T:
    """``bind(port)`` for the first port of the setting's ports that is free.

    ``bind(0)`` when the setting asks for any port. ``in_use(e)`` says whether an error
    means "taken" (try the next port) rather than a real failure.
    """
    ports = port_list(value, key)
    if ports is None:
        return bind(0)
    for port in ports:
        try:
            return bind(port)
        except Exception as e:  # noqa: BLE001 - in_use decides; the rest is raised as it is
            if not in_use(e):
                raise
    raise PortRangeError(f"no free port in {_ports_text(ports)} ({key}) on {where}: every one is in use; "
                         f"widen the range or stop what holds them")


def os_in_use(e: Exception) -> bool:
    """True for a socket error that means the port is taken."""
    return isinstance(e, OSError) and e.errno in (errno.EADDRINUSE, errno.EACCES)


def zmq_in_use(e: Exception) -> bool:
    """True for a ZeroMQ bind error that means the port is taken."""
    return getattr(e, "errno", None) in (errno.EADDRINUSE, errno.EACCES)


def bind_zmq(sock: Any, bind: str, value: Any, key: str) -> int:
    """Bind a ZeroMQ socket on ``bind`` at the setting's port (range); returns the port."""
    def attempt(port: int) -> int:
        if port == 0:
            return int(sock.bind_to_random_port(f"tcp://{bind}", *ZMQ_RANDOM))
        sock.bind(f"tcp://{bind}:{port}")
        return port
    return bind_first_free(attempt, value, key, bind, zmq_in_use)
