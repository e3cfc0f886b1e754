"""Which partitions a spout task reads, and handing them over between tasks.

The task that reads a partition records itself as its owner (``owners``: a side consumer
group, since not every broker keeps commit metadata), and when a new partition list moves
the partition away, it stops fetching, lets what it emitted finish (retries included), and
as its last ack arrives commits and (once the commit landed) marks the partition released.
The new owner starts once it sees the release (or after the owner stayed silent for
``handover_s``: a dead owner releases nothing).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from squall.connectors.kafka.book import Book
from squall.connectors.kafka.client import import_client, ktp
from squall.connectors.kafka.commits import COMMIT_ANSWER_S, Commits
from squall.connectors.kafka.config import KafkaSpoutConfig
from squall.connectors.kafka.fetcher import Fetcher
from squall.connectors.kafka.gauges import Gauges
from squall.connectors.kafka.health import Health
from squall.connectors.kafka.inflight import InFlight
from squall.connectors.kafka.monitor import Monitor
from squall.connectors.kafka.offsets import OffsetManager, TopicPartition
from squall.connectors.kafka.owners import Owner, decode, encode, tag_of
from squall.connectors.kafka.partitioner import partitions_for_task
from squall.connectors.kafka.start import start_offset
from squall.runtime import clock

log = logging.getLogger("squall.connectors.kafka")


class SeekOutOfRangeError(RuntimeError):
    """A seek to an offset the partition no longer holds (retention, or a topic made again)."""


def check_in_range(name: str, tp: TopicPartition, offset: int, earliest: int, latest: int) -> None:
    """Refuse to read ``tp`` from ``offset`` when the broker no longer has it (no silent skip)."""
    if offset < earliest:
        raise SeekOutOfRangeError(
            f"{name}: cannot seek {tp.topic}-{tp.partition} to offset {offset}: the partition "
            f"starts at {earliest} now (offsets {offset}..{earliest - 1} were deleted)")
    if offset > latest:
        raise SeekOutOfRangeError(
            f"{name}: cannot seek {tp.topic}-{tp.partition} to offset {offset}: the partition "
            f"ends at {latest} (the topic was deleted and made again?)")


class Handover:
    """Partition ownership of one spout task, on the task's thread.

    ``draining``: moved away, finishing what was emitted; ``waiting``: this task's, not yet
    released by their previous owner (since when, on the simulated clock).
    """

    def __init__(self, *, name: str, context: Any, config: KafkaSpoutConfig, owners: Any, handover_s: float,
                 book: Book, health: Health, commits: Commits, fetcher: Fetcher, inflight: InFlight,
                 gauges: Gauges, monitor: Monitor, offset_reset: str = "latest") -> None:
        self.name, self.context, self.config, self.owners = name, context, config, owners
        self.handover_s = handover_s
        self.book, self.health, self.commits, self.fetcher = book, health, commits, fetcher
        self.inflight, self.gauges, self.monitor = inflight, gauges, monitor
        self.at_least_once = config.is_at_least_once()
        self.offset_reset = offset_reset
        self.task_index = context.get_this_task_index()
        self.task_count = len(context.get_this_component_tasks())
        self.tag = tag_of(context.topology_name, context.component_id)
        self.draining: set[TopicPartition] = set()
        self.waiting: dict[TopicPartition, float] = {}
        self.releases: list[tuple[list, set[TopicPartition]]] = []  # commits to land before marks
        self.release_key: frozenset | None = None
        self.marks_wanted: dict[TopicPartition, int] = {}  # owner marks not yet sent
        self.marks_sent: dict[TopicPartition, int] = {}    # the owner marks' commit in flight
        self.marks_at = 0.0
        self.orphans: dict[TopicPartition, int] = {}  # see release_orphans
        # sought partitions whose end is to be read again before a seek past it is refused:
        # the answer on its way when the seek came may hold an end read before it
        self.ends_to_reread: set[TopicPartition] = set()

    def reassign(self, partitions: list[TopicPartition]) -> None:
        """A new partition list: let go of the moved ones, ask whether the new ones are released."""
        mine = partitions_for_task(partitions, self.task_index, self.task_count)
        moved = self.book.assigned - mine
        if moved:
            log.info("%s: partitions %s moved to other tasks; finishing what was emitted",
                     self.name, sorted(moved))
            self.fetcher.unassign(moved)
            self.book.assigned -= moved
            if self.at_least_once:
                self.draining |= moved
                self.commit_acked()
            else:
                self.release(moved)
        for tp in list(self.waiting):
            if tp not in mine:
                del self.waiting[tp]
                self.book.sought.pop(tp, None)
        new = sorted(mine - self.book.assigned - self.draining)
        now = clock.monotonic()
        for tp in new:
            self.waiting.setdefault(tp, now)
        if self.waiting:
            self.monitor.request("committed", sorted(self.waiting))

    def take_over(self, committed: dict[TopicPartition, tuple[int, int, int, int]]) -> None:
        """Start reading each partition whose previous owner released it (or is gone).

        A partition whose start offset the broker no longer holds is refused: it stays
        waiting (with the offset a seek gave it) and the others of the answer are taken; the
        refusal is raised after them and again at every refresh until it is resolved. A
        sought offset past the answer's end is first asked again: that answer may have been
        read before the seek, while the old owner was still reading the partition further
        (an end only grows, unless the topic is made again). A group offset out of range is
        refused under ``auto.offset.reset`` ``error`` (exactly-once), else reported and
        moved to the earliest or latest offset.
        """
        now = clock.monotonic()
        take = []
        refused: list[SeekOutOfRangeError] = []
        reread = False
        for tp, (offset, code, lo, hi) in sorted(committed.items()):
            since = self.waiting.get(tp)
            if since is None:
                continue
            owner = decode(code)
            same_topology = owner is not None and owner.tag == self.tag
            busy = owner is not None and same_topology and not owner.released \
                and owner.task != self.context.task_id \
                and owner.task in self.context.get_this_component_tasks()
            if busy and now - since < self.handover_s:
                continue  # its previous owner is finishing it: ask again at the next refresh
            self.book.watermarks[tp] = (lo, hi)
            try:
                if tp in self.book.sought:  # a seek came before the partition was ours to read
                    start = self.book.sought[tp]
                    if start > hi and tp in self.ends_to_reread:
                        self.ends_to_reread.discard(tp)
                        reread = True
                        continue
                    check_in_range(self.name, tp, start, lo, hi)
                else:
                    start = self.group_start(tp, offset, same_topology, lo, hi)
            except SeekOutOfRangeError as e:
                refused.append(e)  # kept waiting, its sought offset kept: refused again next time
                continue
            self.book.sought.pop(tp, None)
            del self.waiting[tp]
            take.append((tp, start))
        if take:
            for tp, start in take:
                self.book.assigned.add(tp)
                self.book.fetched[tp] = self.book.upto[tp] = self.book.started[tp] = start
                if self.at_least_once:
                    self.book.managers[tp] = OffsetManager(tp, start)
            self.fetcher.assign(take)
            self.gauges.ensure()
            # this task is the owner now: a later owner waits for its release
            self.mark_owner([tp for tp, _ in take], released=False)
            log.info("%s: reading %s", self.name,
                     ", ".join(f"{tp.topic}-{tp.partition}@{s}" for tp, s in take))
        if reread:  # asked after the seek: its answer's end is at least the seek's
            self.monitor.request("committed", sorted(self.waiting))
        if refused:
            raise refused[0]

    def group_start(self, tp: TopicPartition, offset: int, same_topology: bool, lo: int, hi: int) -> int:
        """Where a partition taken without a seek starts: the group offset, or the strategy's."""
        start = start_offset(self.config.first_poll_offset_strategy, offset if offset >= 0 else None,
                             same_topology, lo, hi)
        if lo <= start <= hi:
            return start
        if self.offset_reset == "error":
            check_in_range(self.name, tp, start, lo, hi)  # raises
        moved = lo if self.offset_reset in ("earliest", "smallest", "beginning") else hi
        self.health.collector.report_error(SeekOutOfRangeError(
            f"{self.name}: {tp.topic}-{tp.partition}'s committed offset {start} is out of range "
            f"({lo}..{hi}); auto.offset.reset {self.offset_reset!r} starts it at {moved}"
            + (f" (offsets {start}..{lo - 1} were deleted)" if start < lo else "")))
        return moved

    def commit_acked(self, sync: bool = False) -> None:
        """Commit what is acked (AT_LEAST_ONCE), and release the draining partitions that are done."""
        if not self.at_least_once:
            return
        self.commits.commit_acked(sync)
        self.release_drained(final=sync)

    def release_orphans(self, owners: dict[TopicPartition, int]) -> None:
        """Release orphans: partitions this task's marks hold but it neither reads nor hands over.

        A seek listed them: this task was handing them over when its previous instance
        died. Each is released at the listed offset, since the checkpoint holds what came
        before it.
        """
        orphans, self.orphans = self.orphans, {}
        released = []
        for tp, offset in sorted(orphans.items()):
            owner = decode(owners.get(tp))
            if owner is None or owner.tag != self.tag or owner.task != self.context.task_id \
                    or owner.released or tp in self.book.assigned or tp in self.draining \
                    or tp in self.waiting:
                continue
            released.append(tp)
            self.releases.append(([ktp(tp, offset, self.commits.metadata(released=True))], {tp}))
        if released:
            log.info("%s: releasing %s, handed over by this task before it restarted", self.name,
                     ", ".join(f"{tp.topic}-{tp.partition}@{orphans[tp]}" for tp in released))
            self.pump()

    def release_drained(self, final: bool = False) -> None:
        """Release each draining partition whose records are all acked (called as acks arrive)."""
        for tp in [tp for tp in self.draining if not self.book.managers[tp].num_uncommitted_offsets()
                   or self.commits.drained(tp)]:
            self.release({tp}, final=final)

    def release(self, tps: set[TopicPartition], final: bool = False) -> None:
        """Commit where each partition stands, then mark it released, and forget it.

        The release mark goes out only once the commit landed (the next owner starts from
        it): ``pump`` sends them in that order without waiting on the task's thread.
        ``final`` (closing): both now, waiting for the commit while the broker answers.
        """
        offsets = []
        for tp in tps:
            manager = self.book.managers.pop(tp, None)
            self.draining.discard(tp)
            if manager is not None:
                nxt = manager.find_next_commit_offset()
                offsets.append(ktp(tp, nxt if nxt is not None else manager.committed_offset,
                                   self.commits.metadata(released=True)))
            elif tp in self.book.fetched:
                offsets.append(ktp(tp, self.book.fetched[tp], self.commits.metadata(released=True)))
            self.forget(tp)
        if final:
            if offsets:
                self.commits.send(offsets, sync=self.health.down is None)
            self.mark_owner(tps, released=True, final=True)
            return
        self.releases.append((offsets, set(tps)))
        self.pump()

    @property
    def busy(self) -> bool:
        """Whether releases or owner marks wait to go out (``pump`` has work)."""
        return bool(self.releases or self.marks_sent or self.marks_wanted)

    def pump(self) -> None:
        """Send what waits, in order: a release's commit, then (once it landed) its mark."""
        while self.releases:
            offsets, tps = self.releases[0]
            if self.release_key is not None:
                landed = self.commits.landed(self.release_key)
                if landed is None:
                    break  # answered from a later poll of the consumer
                self.release_key = None
                if not landed:
                    continue  # sent again below (its failure went to the health check)
            elif offsets:
                self.release_key = self.commits.send_awaited(offsets)
                break  # None: another commit is on its way; sent at a later call
            self.releases.pop(0)
            self.mark_owner(tps, released=True)
        if self.marks_sent:
            self.owners.poll(0)  # serves on_owner_commit
            if self.marks_sent and time.monotonic() - self.marks_at > COMMIT_ANSWER_S:
                self.on_owner_commit("no answer", [])
        if self.marks_wanted and not self.marks_sent:
            self.send_marks()

    def mark_owner(self, tps: Any, released: bool, final: bool = False) -> None:
        """Commit this task as the owner of ``tps`` in the side group (see ``owners``).

        Asynchronous, one commit at a time: a later mark of a partition is sent only after
        the earlier one was answered, so it cannot be overtaken (``final``: now, waited for
        while the broker answers).
        """
        if not tps:
            return
        code = encode(Owner(self.tag, self.context.task_id, released))
        for tp in tps:
            self.marks_wanted[tp] = code
        if final:
            self._final_marks()
            return
        if not self.marks_sent:
            self.send_marks()

    def send_marks(self) -> None:
        """Send the wanted owner marks as one asynchronous commit."""
        marks, self.marks_wanted = self.marks_wanted, {}
        try:
            self.owners.commit(offsets=[ktp(tp, c) for tp, c in marks.items()], asynchronous=True)
        except import_client().KafkaException as e:
            self.health.unreachable(f"commit failed: {e}")
            self.marks_wanted = {**marks, **self.marks_wanted}
            return
        self.marks_sent, self.marks_at = marks, time.monotonic()

    def on_owner_commit(self, error: Any, partitions: list) -> None:
        """The answer to the owner marks sent (on this task's thread, from ``owners.poll``)."""
        sent, self.marks_sent = self.marks_sent, {}
        failed = error is not None or any(k.error is not None for k in partitions or ())
        if failed:
            for tp, code in sent.items():
                self.marks_wanted.setdefault(tp, code)  # a newer mark of it wins
            if error is not None and not isinstance(error, str):
                self.health.on_client_error(error)
            else:
                self.health.unreachable(f"owner marks not committed: {error or partitions}")

    def recommit(self) -> bool:
        """Commit every partition read again at its committed offset, and its owner mark.

        The groups have no members (partitions are assigned by hand), so the broker expires
        each offset ``offsets.retention.minutes`` after its last commit: an idle partition's
        offset, or an owner mark, would otherwise vanish. False: not sent yet (a commit was
        in flight), to be called again.
        """
        offsets = []
        for tp in sorted(self.book.assigned):
            manager = self.book.managers.get(tp)
            if manager is not None:  # (where it was taken, if nothing was committed since)
                offsets.append(ktp(tp, manager.committed_offset, self.commits.metadata()))
            elif tp in self.book.fetched:
                offsets.append(ktp(tp, self.book.fetched[tp], self.commits.metadata()))
        if offsets and self.commits.send(offsets, sync=False) is None and self.health.down is None:
            return False  # another commit is on its way: again at the next call
        self.mark_owner(sorted(self.book.assigned), released=False)
        return True

    def close_out(self) -> None:
        """Closing: send the releases and owner marks still waiting, now."""
        for offsets, tps in self.releases:
            if offsets:
                self.commits.send(offsets, sync=self.health.down is None)
            for tp in tps:
                self.marks_wanted[tp] = encode(Owner(self.tag, self.context.task_id, True))
        self.releases, self.release_key = [], None
        marks = {**self.marks_sent, **self.marks_wanted}
        self.marks_sent, self.marks_wanted = {}, marks
        if marks:
            self._final_marks()

    def _final_marks(self) -> None:
        marks, self.marks_wanted = self.marks_wanted, {}
        try:
            self.owners.commit(offsets=[ktp(tp, c) for tp, c in marks.items()],
                               asynchronous=self.health.down is not None)
        except import_client().KafkaException as e:
            self.health.unreachable(f"commit failed: {e}")

    def forget(self, tp: TopicPartition) -> None:
        """Drop everything this task knows of ``tp`` but its ownership."""
        self.inflight.forget(tp)
        for known in (self.book.fetched, self.book.watermarks, self.book.upto, self.book.started):
            known.pop(tp, None)
