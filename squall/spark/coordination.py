"""The coordination protocol between the topology master and its workers (pure data).

Workers talk to the master over one ZeroMQ DEALER socket each; the master has a ROUTER.
Messages are msgpack maps with a ``t`` (type) key and a sequence number ``n``, sent sealed
(``Link``): two parts, a keyed BLAKE2b tag under the topology's secret of the direction,
the worker process's identity and the message, then the message. Each end takes a
message only if its tag is right and its ``n`` is above the last one taken, so nobody
without the secret can register a worker, command one (stop, deactivate, a new address
map) or replay a captured message. The ``register`` message is the first of its link:
its tag is the proof, bound to the identity (topology, worker index, launch, attempt,
pid, which the master checks against the message) and to the address and nonce it
announces.

worker -> master
    ``register``  {worker, launch, attempt, pid, host, address, nonce}: a worker process is
                  up and its receive socket is bound at ``address``; ``nonce`` is its
                  transport's end of every link (see ``transport``).
    ``started``   {worker, launch, error}: its tasks are open (error None) or failed to open.
    ``heartbeat`` {worker, launch, metrics, errors, rejected_frames, stuck, samples}: alive;
                  task metrics (with ``user``: the task's user metrics as plain data, when it
                  has some); new errors; frames dropped for lacking the topology's secret;
                  its tasks stuck in one call now; tuples sampled while debugging is on
                  (``squall.runtime.sampling``).
    ``applied``   {seq}: the activate/deactivate ``seq`` took effect (spouts told; no
                  ``next_tuple`` starts after a deactivate).
    ``rescaled``  {seq, value, error}: the live rescale step ``seq`` ran on the loop thread
                  (its value, or its error in one line).
    ``memory``    {rss_mb, limit_mb}: its RSS went over its memory limit; it ends its
                  process once answered with ``stop`` (``squall.spark.memory``).
master -> worker
    ``welcome``   {addresses, nonces, active}: registration accepted; the peers' addresses
                  and transport nonces.
    ``addresses`` {addresses, nonces}: the workers whose process changed (a worker came
                  back, maybe elsewhere), merged into the map (only theirs: never the
                  whole map again).
    ``activate`` / ``deactivate`` {seq}: spouts on or off; answered with ``applied``.
    ``debug``     {rate, components}: sample emitted tuples at ``rate`` (0 turns it off),
                  of ``components`` only when given.
    ``rescale``   {seq, step, ...}: one step of a live rescale (``spark.worker_rescale``):
                  ``learn`` {parallelism, changes, tasks} / ``unlearn``, ``add`` / ``unadd``
                  / ``switch`` / ``retire`` {ids}; answered with ``rescaled``.
    ``stop``      {graceful}: stop the tasks and end the Spark task.
    ``reject``    {reason}: registration refused (a newer launch of that worker exists).
    ``ack``       : the master is alive (answers a heartbeat at most every 5 s: ``master.ACK_EVERY``).
"""

from __future__ import annotations

import hashlib
import hmac
from collections import deque
from typing import Any

import msgpack

from squall.runtime.metrics import FIELDS as METRIC_FIELDS
from squall.runtime.metrics import HISTOGRAMS, TaskMetrics, empty_histogram
from squall.runtime.user_metrics import ReceivedMetrics

REGISTER = "register"
STARTED = "started"
HEARTBEAT = "heartbeat"
WELCOME = "welcome"
ADDRESSES = "addresses"
ACTIVATE = "activate"
DEACTIVATE = "deactivate"
DEBUG = "debug"
STOP = "stop"
REJECT = "reject"
ACK = "ack"
APPLIED = "applied"
RESCALE = "rescale"
RESCALED = "rescaled"
MEMORY = "memory"

TO_MASTER = b"w2m"
TO_WORKER = b"m2w"
TAG_BYTES = 16
MAX_MESSAGE_BYTES = 64 << 20  # zmq.MAXMSGSIZE of the coordination sockets (heartbeats' metrics)

# Recent complete latencies shipped per spout task and heartbeat: enough for p50/p99.
LATENCY_SAMPLES = 2000
# ... and at most this many per component, whatever its parallelism (``latency_samples``):
# the master sorts them all for each info, and each heartbeat carries its share.
COMPONENT_LATENCY_SAMPLES = 200_000
MIN_LATENCY_SAMPLES = 100
ADDITIVE = ("emitted", "transferred", "acked", "failed", "executed", "exec_sampled_ms",
            "exec_samples", "process_ms", "process_samples", "complete_ms", "complete_samples")


def encode(t: str, **fields: Any) -> bytes:
    """One message of type ``t`` (its ``t`` last: ``HEARTBEAT_TAIL``)."""
    fields.pop("t", None)
    fields["t"] = t
    return msgpack.packb(fields, use_bin_type=True)


# how a heartbeat's message ends (``encode`` writes ``t`` last): the master tells a heartbeat
# from a control message before decoding it (``Link.scan_heartbeat``)
HEARTBEAT_TAIL = msgpack.packb("t") + msgpack.packb(HEARTBEAT)
_SCANNED = frozenset(("t", "n", "errors", "samples"))


def decode(data: bytes) -> dict:
    """A message as a dict (raises ``ValueError`` if it is not one)."""
    msg = msgpack.unpackb(data, raw=False, strict_map_key=False)
    if not isinstance(msg, dict) or "t" not in msg:
        raise ValueError("not a squall coordination message")
    return msg


def _tag(secret: bytes, direction: bytes, ident: bytes, payload: bytes) -> bytes:
    h = _tagger(secret, direction, ident)
    h.update(payload)
    return h.digest()


def _tagger(secret: bytes, direction: bytes, ident: bytes) -> Any:
    """The keyed hash of ``_tag`` with everything but the payload fed in (copy it per message)."""
    h = hashlib.blake2b(key=secret[:64], digest_size=TAG_BYTES)
    for part in (direction, len(ident).to_bytes(4, "little"), ident):
        h.update(part)
    return h


class Link:
    """One worker process's coordination link, as one end sees it.

    It seals what it sends and opens what it receives (see the module docstring).

    >>> ident = b"wc/0/1/0/9"
    >>> worker, master = Link(b"k" * 32, ident, TO_MASTER), Link(b"k" * 32, ident, TO_WORKER)
    >>> master.open(worker.seal(REGISTER, worker=0))["t"]
    'register'
    >>> parts = worker.seal(HEARTBEAT)
    >>> master.open(parts)["t"], master.open(parts)
    ('heartbeat', None)
    >>> parts = worker.seal(HEARTBEAT, metrics=[{"task": 1}], errors=[{"e": 1}], samples=[])
    >>> master.scan_heartbeat(parts), master.scan_heartbeat(parts)
    (([{'e': 1}], []), None)

    Heartbeats are counted apart from the other messages (``beats_taken``): the master
    takes control messages as they arrive and heartbeats later (``squall.spark.master``).
    """

    def __init__(self, secret: bytes, identity: bytes, sends: bytes) -> None:
        self.secret = secret
        self.identity = identity
        self.sends = sends
        self.receives = TO_WORKER if sends == TO_MASTER else TO_MASTER
        self.sent = 0
        self.taken = 0
        self.beats_taken = 0
        self.refused = 0
        # the keyed hash fed with all but the payload, copied per message: the master tags and
        # checks 1,000 messages a second at 1,000 workers, and the key's set-up was half the work
        self._send_tagger = _tagger(secret, self.sends, identity)
        self._receive_tagger = _tagger(secret, self.receives, identity)

    def seal(self, t: str, **fields: Any) -> list[bytes]:
        """The two parts of message ``t``: its tag and the message."""
        self.sent += 1
        fields["n"] = self.sent
        payload = encode(t, **fields)
        h = self._send_tagger.copy()
        h.update(payload)
        return [h.digest(), payload]

    def open(self, parts: list[bytes]) -> dict | None:
        """The message if authentic and new on this link, else None (counted in ``refused``)."""
        if self._authentic(parts):
            try:
                msg = decode(parts[1])
            except ValueError:
                msg = None
            n = msg.get("n") if msg else None
            if isinstance(n, int) and not isinstance(n, bool):
                beat = msg["t"] == HEARTBEAT  # type: ignore[index]
                if n > (self.beats_taken if beat else self.taken):
                    if beat:
                        self.beats_taken = n
                    else:
                        self.taken = n
                    return msg
        self.refused += 1
        return None

    def scan_heartbeat(self, parts: list[bytes]) -> tuple[list, list] | None:
        """An authentic new heartbeat's ``errors`` and ``samples``, its metrics left undecoded.

        None (counted in ``refused``) if ``parts`` is not one. Cheaper than ``open`` by the
        metrics, which make most of a heartbeat: the master decodes only the heartbeats it
        handles (``decode``), the newest of each worker.
        """
        if self._authentic(parts):
            fields: dict[str, Any] = {}
            try:
                unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
                unpacker.feed(parts[1])
                for _ in range(unpacker.read_map_header()):
                    key = unpacker.unpack()
                    if key in _SCANNED:
                        fields[key] = unpacker.unpack()
                    else:
                        unpacker.skip()
            except Exception:  # noqa: BLE001 - msgpack's errors for malformed data vary
                fields = {}
            n = fields.get("n")
            if (fields.get("t") == HEARTBEAT and isinstance(n, int) and not isinstance(n, bool)
                    and n > self.beats_taken):
                self.beats_taken = n
                return list(fields.get("errors") or ()), list(fields.get("samples") or ())
        self.refused += 1
        return None

    def _authentic(self, parts: list[bytes]) -> bool:
        if len(parts) != 2:
            return False
        h = self._receive_tagger.copy()
        h.update(parts[1])
        return hmac.compare_digest(parts[0], h.digest())


def identity(topology: str, worker: int, launch: int, attempt: int, pid: int) -> bytes:
    """The DEALER identity of one worker process: unique per launch, attempt and pid."""
    return f"{topology}/{worker}/{launch}/{attempt}/{pid}".encode()


def latency_samples(spout_tasks: int) -> int:
    """Complete latencies shipped per spout task of a component of ``spout_tasks`` tasks.

    >>> latency_samples(2), latency_samples(2000), latency_samples(10**6)
    (2000, 100, 100)
    """
    return max(MIN_LATENCY_SAMPLES, min(LATENCY_SAMPLES, COMPONENT_LATENCY_SAMPLES // max(1, spout_tasks)))


def metrics_to_dict(m: TaskMetrics, samples: int = LATENCY_SAMPLES) -> dict:
    """A task's metrics as plain data for a heartbeat, with its latest ``samples`` complete latencies."""
    out: dict[str, Any] = {}
    for name in METRIC_FIELDS:
        value = getattr(m, name)
        if isinstance(value, deque):
            for _ in range(3):  # the loop thread may append meanwhile
                try:
                    value = list(value)[-samples:]
                    break
                except RuntimeError:
                    continue
            else:
                value = []
        out[name] = value
    user = m.user_raw()  # gauges are read here, on the heartbeat's thread
    if user:
        out["user"] = user
    streams = m.stream_counts()
    if streams["out"] or streams["in"]:
        out["streams"] = streams
    return out


def metrics_from_dict(d: dict, carried: dict | None = None) -> TaskMetrics:
    """Rebuild ``TaskMetrics``; ``carried`` adds counters of the task's earlier processes."""
    kwargs = {k: v for k, v in d.items() if k in METRIC_FIELDS}
    m = TaskMetrics(**{k: v for k, v in kwargs.items() if k != "complete_recent"})
    m.complete_recent.extend(kwargs.get("complete_recent", ()))
    if d.get("user"):
        m.user = ReceivedMetrics(d["user"])
    streams: dict[str, dict] = {"out": {}, "in": {}}
    _add_streams(streams, d.get("streams") or {})
    for key, value in (carried or {}).items():
        if key == "streams":
            _add_streams(streams, value)
        elif key in HISTOGRAMS:
            setattr(m, key, [a + b for a, b in zip(getattr(m, key), value, strict=False)])
        else:
            setattr(m, key, getattr(m, key) + value)
    m.outputs, m.inputs = streams["out"], streams["in"]
    return m


def _add_streams(total: dict, d: dict) -> None:
    """Add one process's per-stream counts (``TaskMetrics.stream_counts``) to ``total``."""
    for stream, counts in (d.get("out") or {}).items():
        old = total["out"].get(stream) or [0] * len(counts)
        total["out"][stream] = [a + b for a, b in zip(old, counts, strict=True)]
    for component, streams in (d.get("in") or {}).items():
        mine = total["in"].setdefault(component, {})
        for stream, row in streams.items():
            old = mine.get(stream) or [0] * len(row)
            mine[stream] = [a + b for a, b in zip(old, row, strict=True)]


def add_counters(total: dict, d: dict) -> None:
    """Fold one dead process's counters of a task into ``total`` (kept across restarts)."""
    for key in ADDITIVE:
        if key in d:
            total[key] = total.get(key, 0) + d[key]
    for key in HISTOGRAMS:  # counts per latency bucket, added bucket by bucket
        if key in d:
            total[key] = [a + b for a, b in zip(total.get(key) or empty_histogram(), d[key], strict=False)]
    if d.get("streams"):
        _add_streams(total.setdefault("streams", {"out": {}, "in": {}}), d["streams"])
