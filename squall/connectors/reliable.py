"""``ReliableSpout``: Storm's replay-on-fail, with a retry limit, backoff and dead letters.

A subclass says how to read its source (``next_message``) and how to commit there
(``on_done``); the base class tracks every message until its tuple tree completes, replays
failed ones after a backoff on the runtime's clock (so ``simulated_time()`` drives it), and
after ``max_retries`` replays sends the message to the ``__dead_letter`` stream with the
reason. A message is committed at the source (``on_done``) only once its tree is acked or its
dead letter is acked, so a restart resumes where acking left off and replays the rest.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from squall.api.components import OutputFieldsDeclarer, Spout
from squall.api.fields import Fields
from squall.connectors.replay import Letter, ReplayPolicy
from squall.runtime import clock
from squall.runtime.failures import Failure

log = logging.getLogger("squall.connectors")

DEAD_LETTER_STREAM = "__dead_letter"
DEAD_LETTER_FIELDS = Fields("msg_id", "values", "reason", "error", "component", "task", "attempts")
MAX_RETRIES_KEY = "squall.spout.max.retries"


class GivenUpError(RuntimeError):
    """Reported when a message is sent to ``__dead_letter`` after its last retry."""


class _DeadLetterId:
    """The msg id a dead letter is emitted with: its ack commits the original message."""

    __slots__ = ("msg_id",)

    def __init__(self, msg_id: Any) -> None:
        self.msg_id = msg_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _DeadLetterId) and other.msg_id == self.msg_id

    def __hash__(self) -> int:
        return hash(("__dead_letter", self.msg_id))

    def __repr__(self) -> str:
        return f"dead letter of {self.msg_id!r}"


def declare_dead_letter(declarer: OutputFieldsDeclarer) -> None:
    """Declare ``__dead_letter`` unless it already is."""
    if DEAD_LETTER_STREAM not in declarer.streams:
        declarer.declare(DEAD_LETTER_FIELDS, stream=DEAD_LETTER_STREAM)


class ReliableSpout(Spout):
    """A spout that replays failed messages with backoff and dead-letters poison ones.

    Subclass it and implement ``next_message`` (return ``(msg_id, values)`` or None) and
    ``on_done`` (commit at the source); declare the default stream's fields in
    ``declare_output_fields`` as usual (``__dead_letter`` is declared for you). Leave
    ``next_tuple``, ``ack`` and ``fail`` to the base class. ``open`` may be overridden
    freely: the base class's own setup runs before it either way.

    Class attributes (or instance attributes set in ``__init__``):

    - ``max_retries``: replays before a message goes to ``__dead_letter``. When a subclass
      does not set it, the topology's ``squall.spout.max.retries`` applies (the same limit
      plain spouts get); neither set, or set to None: replay forever.
    - ``retry_backoff_secs``: wait before the first replay, doubling with each further one,
      up to ``retry_backoff_max_secs``.

    Threading: as every spout, all calls come from the task's one thread. Msg ids must be
    hashable and, to travel on ``__dead_letter``, serializable.
    """

    max_retries: int | None = None
    retry_backoff_secs: float = 0.1
    retry_backoff_max_secs: float = 30.0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A subclass's own open / declare_output_fields need not call super(): wrap them so
        # the replay state exists and __dead_letter is declared whatever they do.
        own_open = cls.__dict__.get("open")
        if own_open is not None and not getattr(own_open, "_reliable", False):
            @functools.wraps(own_open)
            def open(self: ReliableSpout, conf: dict, context: Any, collector: Any) -> None:
                ReliableSpout._setup(self, conf, context, collector)
                own_open(self, conf, context, collector)
            open._reliable = True  # type: ignore[attr-defined]
            cls.open = open  # type: ignore[method-assign]
        own_declare = cls.__dict__.get("declare_output_fields")
        if own_declare is not None and not getattr(own_declare, "_reliable", False):
            @functools.wraps(own_declare)
            def declare_output_fields(self: ReliableSpout, declarer: OutputFieldsDeclarer) -> None:
                own_declare(self, declarer)
                declare_dead_letter(declarer)
            declare_output_fields._reliable = True  # type: ignore[attr-defined]
            cls.declare_output_fields = declare_output_fields  # type: ignore[method-assign]

    # ---- what subclasses implement -------------------------------------------------------

    def next_message(self) -> tuple[Any, list] | None:
        """The next message from the source as ``(msg_id, values)``, or None if none waits."""
        raise NotImplementedError(f"{type(self).__name__} must implement next_message()")

    def on_done(self, msg_id: Any) -> None:
        """``msg_id`` is finished (its tree acked, or its dead letter acked): commit it."""

    # ---- the spout -------------------------------------------------------------------------

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        """Set up the replay state; subclasses that override this get it done first."""
        self._setup(conf, context, collector)

    def _setup(self, conf: dict, context: Any, collector: Any) -> None:
        self._collector = collector
        self._component = getattr(context, "component_id", type(self).__name__)
        limit = self._resolve_max_retries(conf)
        base = _non_negative(self, "retry_backoff_secs", self.retry_backoff_secs)
        cap = _non_negative(self, "retry_backoff_max_secs", self.retry_backoff_max_secs)
        self._replays = ReplayPolicy(limit, base, max(base, cap))
        self._letters: dict[Any, Letter] = {}  # msg id -> its dead letter, until acked
        self._letters_due = ReplayPolicy(None, base, max(base, cap))

    def _resolve_max_retries(self, conf: dict) -> int | None:
        # set on the instance or on a subclass: the spout's own; else the topology's key
        own = "max_retries" in vars(self) or any(
            "max_retries" in vars(k) for k in type(self).__mro__
            if k is not ReliableSpout and issubclass(k, ReliableSpout))
        value = self.max_retries if own else conf.get(MAX_RETRIES_KEY)
        name = "max_retries" if own else MAX_RETRIES_KEY
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{type(self).__name__}: {name} must be a non-negative integer "
                             f"or None, got {value!r}")
        return value

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declares ``__dead_letter``; subclasses declare their own streams too."""
        declare_dead_letter(declarer)

    def next_tuple(self) -> None:
        """Emit one message: a dead letter or replay whose time has come, else a new one."""
        now = clock.monotonic()
        letter = self._letters_due.next_replay(now)
        if letter is not None:
            self._emit_letter(self._letters[letter[0]])
            return
        replay = self._replays.next_replay(now)
        if replay is not None:
            self._collector.emit(list(replay[1]), msg_id=replay[0])
            return
        message = self.next_message()
        if message is None:
            return
        msg_id, values = message
        if msg_id is None:
            raise ValueError(f"{type(self).__name__}.next_message returned msg_id None: "
                             "every message needs an id to be acked")
        values = list(values)
        if self._replays.started(msg_id, values):
            self._collector.emit(values, msg_id=msg_id)
        else:
            log.debug("%s: %r is already in flight; not emitted twice", self._component, msg_id)

    def ack(self, msg_id: Any) -> None:
        """Its tree completed: commit it at the source."""
        if isinstance(msg_id, _DeadLetterId):
            if self._letters.pop(msg_id.msg_id, None) is not None:
                self._letters_due.done(msg_id.msg_id)
                self.on_done(msg_id.msg_id)
            return
        if self._replays.done(msg_id):
            self.on_done(msg_id)

    def fail(self, msg_id: Any) -> None:
        """Its tree failed without a reason given (``fail_with_reason`` has one)."""
        self.fail_with_reason(msg_id, Failure("failed"))

    def fail_with_reason(self, msg_id: Any, failure: Failure) -> None:
        """Its tree failed (the runtime calls this, with why and where): replay or give up."""
        if isinstance(msg_id, _DeadLetterId):
            # a dead letter is never given up: it is the last record of the message
            self._letters_due.failed(msg_id.msg_id, failure, clock.monotonic())
            return
        letter = self._replays.failed(msg_id, failure, clock.monotonic())
        if letter is None:
            return
        self._collector.report_error(GivenUpError(
            f"{self._component}: message {msg_id!r} failed {letter.attempts} times "
            f"(max_retries={self._replays.max_retries}, last reason: {letter.reason}): "
            f"sent to {DEAD_LETTER_STREAM}"))
        self._letters[msg_id] = letter
        self._letters_due.started(msg_id, [])
        self._emit_letter(letter)

    def _emit_letter(self, letter: Letter) -> None:
        self._collector.emit(list(letter), stream=DEAD_LETTER_STREAM,
                             msg_id=_DeadLetterId(letter.msg_id))

    # ---- seeking (exactly-once) ---------------------------------------------------------------

    def rewind(self, before: Callable[[Any], bool]) -> None:
        """A seek's bookkeeping: messages ``before`` the position are done, the others forgotten.

        A seek goes to a committed checkpoint's position, so what came before it is done (and
        committed at the source, ``on_done``, as its ack would); what came after is read again,
        so it is dropped with its pending replay or dead letter, without ``fail``. Seekable
        subclasses call this from ``seek`` with a test on msg ids.
        """
        ids = list(self._replays.clear()) + list(self._letters)
        self._letters.clear()
        self._letters_due.clear()
        for msg_id in ids:
            if before(msg_id):
                self.on_done(msg_id)

    # ---- progress --------------------------------------------------------------------------

    def in_flight(self) -> int:
        """Messages emitted and not yet done (replays waiting and dead letters included)."""
        return len(self._replays) + len(self._letters)


def _non_negative(spout: object, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{type(spout).__name__}: {name} must be a non-negative number of "
                         f"seconds, got {value!r}")
    return float(value)
