"""``FileSpout``: the lines of the files in a directory, new files and appended lines.

Each line (without its line break) is a tuple on ``Fields("line")``; its msg id is
``(file name, byte offset)``. Files are shared among the spout's tasks by their names
(``squall.connectors.sharing.owner_of``: numbered and dated names spread evenly). A line is
emitted once it is complete (ends with a newline), so a line being written is read when its
writer finishes it.

Progress: per file, the offset below which every line is acked (or dead-lettered), written
atomically to ``<progress>/<file name>.offset`` at most every ``commit_interval_secs`` on the
runtime's clock and on deactivate/close. A restart reads from there: lines not done are
replayed, and lines done after the last write are read again (at-least-once; duplicates
bounded by one commit interval). A file that shrinks below what was read (truncated or
replaced) is reported and skipped (``on_truncate="skip"``) or read again from the start
(``"restart"``).

Seeking (exactly-once): ``position()`` is ``{file name: byte offset of the next line to emit}``
over the files this task has read whose progress file does not already say as much (a file
whose every emitted line is done and written to its progress is left out: the position stays
as small as the files in progress, however many were read); ``seek`` reads each listed file
again from its offset and every other file from its committed progress (in exactly-once
mode a line is acked only once the checkpoint covering it committed, so the progress never
passes the committed position). A listed file that is shorter than its offset is refused
with ``SourceTruncatedError``; one that is gone is taken as done when it had been read to
its end or its progress reaches the offset (archived or deleted once processed), and
refused otherwise. A listed name must be a plain file name of the followed directory:
positions come from a state store, and a name with a separator or ``..`` is refused.
Another task count merges the old tasks' positions (``merge_positions``): each file's entry
goes to the task that owns the file now. A position saved under an older assignment at the
same task count may list files another task owns now: ``seek`` hands them over, writing their
progress up to the offset (never back) for their owner to read from.
"""

from __future__ import annotations

import fnmatch
import logging
import os
from pathlib import Path
from typing import Any

from squall.api.components import OutputFieldsDeclarer, SeekableSpout
from squall.api.fields import Fields
from squall.connectors.progress import Watermark
from squall.connectors.reliable import ReliableSpout
from squall.connectors.sharing import owner_of
from squall.runtime import clock

log = logging.getLogger("squall.connectors.files")

LINE_FIELDS = Fields("line")
TRUNCATE_POLICIES = ("skip", "restart")


class SourceTruncatedError(RuntimeError):
    """A followed file became shorter than what was already read from it."""


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that a crash leaves the old or the new, never half."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _plain_name(name: str) -> bool:
    """Whether ``name`` is a plain file name (no separator, not ``..``): positions come from a store."""
    return not (name in ("", ".", "..") or "/" in name or bool(os.altsep and os.altsep in name)
                or os.sep in name or "\0" in name or Path(name).is_absolute())


class FileSpout(ReliableSpout, SeekableSpout):
    """Follows ``directory``: every line of files matching ``pattern``, each acked once.

    ``progress``: the directory for committed offsets (created if missing; default
    ``<directory>/.squall-progress``). ``poll_secs``: how often to look for new files and
    appended lines once everything read is emitted. ``encoding``: of the lines (undecodable
    bytes are replaced).
    """

    def __init__(self, directory: str | os.PathLike, pattern: str = "*", *,
                 progress: str | os.PathLike | None = None, poll_secs: float = 0.5,
                 commit_interval_secs: float = 1.0, read_bytes: int = 1 << 20,
                 encoding: str = "utf-8", on_truncate: str = "skip") -> None:
        if on_truncate not in TRUNCATE_POLICIES:
            raise ValueError(f"FileSpout: on_truncate must be one of {TRUNCATE_POLICIES}, "
                             f"got {on_truncate!r}")
        self.directory = str(directory)
        self.pattern = pattern
        self.progress = str(progress) if progress is not None else None
        self.poll_secs, self.commit_interval_secs = poll_secs, commit_interval_secs
        self.read_bytes, self.encoding, self.on_truncate = int(read_bytes), encoding, on_truncate

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """One field, ``line``."""
        declarer.declare(LINE_FIELDS)

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        """Find this task's share of the files and where acking left off in each."""
        self.root = Path(self.directory)
        if not self.root.is_dir():
            raise ValueError(f"FileSpout: {self.directory!r} is not a directory")
        self.progress_dir = Path(self.progress) if self.progress else self.root / ".squall-progress"
        self.progress_dir.mkdir(parents=True, exist_ok=True)
        self.index = context.get_this_task_index()
        self.tasks = len(context.get_this_component_tasks())
        self.marks: dict[str, Watermark] = {}
        self.sizes: dict[str, int] = {}  # file -> its size when last read (a gone file was done?)
        self.skipped: set[str] = set()
        self._dirty: set[str] = set()
        self._lines: list[tuple[tuple[str, int], list]] = []  # read, to emit (reversed)
        self._next_poll = 0.0
        self._next_commit = clock.monotonic() + self.commit_interval_secs
        self._collector_for_errors = collector
        self.last_lag: int | None = None  # lag() as last measured, for the gauge
        register = getattr(context, "register_gauge", None)
        if callable(register):  # a cheap read: measured on the task's thread at each poll
            register("lag", lambda: self.last_lag)

    # ---- reading ---------------------------------------------------------------------------

    def next_message(self) -> tuple[Any, list] | None:
        """The next complete line of this task's files, or None until the next poll."""
        now = clock.monotonic()
        if now >= self._next_commit:
            self._commit()
            self._next_commit = now + self.commit_interval_secs
        if not self._lines and now >= self._next_poll:
            self.last_lag = self.lag()
            self._poll()
            if not self._lines:
                self._next_poll = now + self.poll_secs
        if not self._lines:
            return None
        return self._lines.pop()

    def mine(self, name: str) -> bool:
        """Whether file ``name`` belongs to this task (``sharing.owner_of`` its name)."""
        return owner_of(name, self.tasks) == self.index

    def _poll(self) -> None:
        names = sorted(e.name for e in os.scandir(self.root)
                       if e.is_file() and fnmatch.fnmatchcase(e.name, self.pattern)
                       and not e.name.startswith("."))
        for name in names:
            if name in self.skipped or not self.mine(name):
                continue
            self._read(name)
            if self._lines:
                return

    def _read(self, name: str) -> None:
        mark = self.marks.get(name)
        if mark is None:
            mark = self.marks[name] = Watermark(self._committed(name))
        path = self.root / name
        try:
            size = self.sizes[name] = path.stat().st_size
            if size < mark.read:
                self._truncated(name, size, mark)
                return
            if size == mark.read:
                return
            with open(path, "rb") as f:
                f.seek(mark.read)
                data = f.read(self.read_bytes)
        except FileNotFoundError:
            return  # removed since the scan: its lines are what they were
        end = data.rfind(b"\n")
        if end < 0:
            if len(data) >= self.read_bytes:
                raise ValueError(f"FileSpout: {path}: a line at byte {mark.read} is longer "
                                 f"than read_bytes={self.read_bytes}")
            return  # no complete line yet
        lines = []
        pos = mark.read
        for raw in data[:end + 1].split(b"\n")[:-1]:
            start, pos = pos, pos + len(raw) + 1
            mark.emitted(start, pos)
            text = raw[:-1] if raw.endswith(b"\r") else raw
            lines.append(((name, start), [text.decode(self.encoding, errors="replace")]))
        lines.reverse()
        self._lines = lines

    def _truncated(self, name: str, size: int, mark: Watermark) -> None:
        error = SourceTruncatedError(
            f"FileSpout: {self.root / name} has {size} bytes, fewer than the {mark.read} "
            f"already read: " + ("skipped from now on" if self.on_truncate == "skip"
                                 else "reading it again from the start"))
        self._collector_for_errors.report_error(error)
        if self.on_truncate == "skip":
            self.skipped.add(name)
        else:
            self.marks[name] = Watermark(0)
            self._dirty.add(name)

    # ---- seeking ---------------------------------------------------------------------------

    def position(self) -> dict[str, int]:
        """Per file read: the byte offset of the next line to emit (lines read ahead excluded).

        A file whose lines emitted so far are all done, with that offset written to its
        progress file, is left out: ``seek`` reads it from there (module docs).
        """
        dirty = self._dirty
        where = {name: mark.read for name, mark in self.marks.items()
                 if name in dirty or mark.position != mark.read or len(mark)}
        if self._lines:  # read from one file, not yet emitted: the next one starts the rest
            name, start = self._lines[-1][0]
            where[name] = start
        return where

    @staticmethod
    def merge_positions(positions: list, index: int, tasks: int) -> dict[str, int]:
        """Task ``index`` of ``tasks``: the entries of the files it owns, from the old tasks' positions.

        Each file had one owner before, so its entry is that task's; ``mine`` takes the same
        files (``sharing.owner_of``).
        """
        merged: dict[str, int] = {}
        for old in positions:
            for name, offset in (old or {}).items():
                if owner_of(str(name), tasks) == index:
                    merged[str(name)] = int(offset)
        return merged

    def seek(self, position: dict[str, int]) -> None:
        """Read each file again from the offset ``position`` gives; unlisted files from their progress.

        A listed file another task reads (a position saved under an older assignment, at the
        same task count: ``merge_positions`` ran only for another count) is handed over: its
        progress catches up to the offset, which its owner reads from.
        """
        offsets, others = self._checked(position)
        self._hand_over(others)
        self.rewind(lambda m: m[0] in offsets and m[1] < offsets[m[0]])
        self._lines = []
        for name in list(self.marks):
            if name not in offsets:
                self.marks[name] = Watermark(self._committed(name))
        for name, offset in offsets.items():
            self.marks.setdefault(name, Watermark(offset)).seek(offset)
            self.skipped.discard(name)
            self._dirty.add(name)
        self._next_poll = 0.0

    def committed(self, position: dict[str, int]) -> None:
        """A (re)started task's committed position: each of its files' progress catches up.

        The lines below each listed offset are in a committed checkpoint, but the task that
        emitted them may have died before their ``ack``: the progress file of each listed
        file this task owns is written at the offset, unless it already says more.
        """
        if not isinstance(position, dict):
            return  # seek refuses it, in one line
        for name, offset in position.items():
            if isinstance(name, str) and _plain_name(name) and self.mine(name) \
                    and int(offset) > self._committed(name):
                write_atomically(self._offset_path(name), f"{int(offset)}\n")

    def _checked(self, position: Any) -> tuple[dict[str, int], dict[str, int]]:
        """The offsets of this task's files to seek to, and those of files another task reads."""
        who = f"FileSpout {self._component!r} (task {self.index})"
        if not isinstance(position, dict):
            raise ValueError(f"{who}: cannot seek to {position!r}: not a {{file: offset}} position")
        offsets: dict[str, int] = {}
        others: dict[str, int] = {}
        for name, offset in position.items():
            if not isinstance(name, str) or not _plain_name(name):
                raise ValueError(f"{who}: cannot seek to {name!r}: not a file name of "
                                 f"{self.directory!r} (positions name files of the followed "
                                 f"directory only)")
            if not self.mine(name):
                others[name] = int(offset)  # its owner checks the file when it reads it
                continue
            path = self.root / name
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                if self.sizes.get(name, -1) == int(offset) or self._committed(name) >= int(offset):
                    # read to its end, or done up to the offset: archived or deleted once
                    # processed. Kept, so its progress is written at the offset
                    offsets[name] = int(offset)
                    continue
                raise SourceTruncatedError(f"{who}: cannot seek to {name} byte {offset}: "
                                           f"{path} no longer exists") from None
            if size < int(offset):
                raise SourceTruncatedError(f"{who}: cannot seek to {name} byte {offset}: "
                                           f"{path} has only {size} bytes now (truncated)")
            offsets[str(name)] = int(offset)
        return offsets, others

    def _hand_over(self, others: dict[str, int]) -> None:
        """Files another task reads now: their progress catches up to the offsets, never back.

        Written before this task emits, and no mark kept: a mark's later commit could write an
        old offset over what the owner has done since.
        """
        for name, offset in others.items():
            self.marks.pop(name, None)
            self._dirty.discard(name)
            if offset > self._committed(name):
                write_atomically(self._offset_path(name), f"{offset}\n")

    # ---- progress --------------------------------------------------------------------------

    def on_done(self, msg_id: Any) -> None:
        """Acked or dead-lettered: move the file's watermark (written at the next commit)."""
        name, start = msg_id
        mark = self.marks.get(name)
        if mark is not None and mark.done(start):
            self._dirty.add(name)

    def _offset_path(self, name: str) -> Path:
        return self.progress_dir / f"{name}.offset"

    def _committed(self, name: str) -> int:
        try:
            text = self._offset_path(name).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return 0
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"FileSpout: {self._offset_path(name)}: not an offset: {text[:40]!r}") from None

    def _commit(self) -> None:
        for name in sorted(self._dirty):
            write_atomically(self._offset_path(name), f"{self.marks[name].position}\n")
        self._dirty.clear()

    def deactivate(self) -> None:
        """Write the offsets acked so far."""
        self._commit()

    def close(self) -> None:
        """Write the offsets acked so far."""
        self._commit()

    def lag(self) -> int:
        """Bytes of this task's files not yet done (read or not)."""
        total = 0
        for e in os.scandir(self.root):
            if (e.is_file() and fnmatch.fnmatchcase(e.name, self.pattern) and self.mine(e.name)
                    and e.name not in self.skipped and not e.name.startswith(".")):
                mark = self.marks.get(e.name)
                total += max(0, e.stat().st_size - (mark.position if mark else self._committed(e.name)))
        return total
