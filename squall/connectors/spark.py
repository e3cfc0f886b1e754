"""Spark DataFrames in and out: ``DataFrameSpout`` and ``DataFrameWriterBolt``.

Each task reads and writes with an engine (``squall.connectors.engines``): Spark, through
the process's SparkSession (the active one in a driver program running a ``LocalCluster``,
else one started on ``squall.connectors.spark.master``), or pyarrow where no session may
start: inside a Spark executor, where the tasks of a topology on the Spark runtime run.
pyspark and pyarrow are imported only when a task opens, or when the spout reads its
columns at build time.

``DataFrameSpout`` reads a batch source in segments it can resume: each input file of a
file-based source (``path=``, any format Spark reads; Parquet, CSV, JSON with pyarrow), or
the whole DataFrame a ``query(spark)`` returns (one segment, in its own order: give it an
``orderBy``; Spark only). A row's msg id is ``(segment, row index)``; per segment, the
count of rows below which every row is acked (or dead-lettered) is committed atomically to
a file of its own in ``progress``, and a segment read to its end with every row done is
recorded as done. A restart skips done segments and replays each other one from its
committed row: at-least-once, duplicates bounded by what completed after the last commit.
Seeking (exactly-once): ``position()`` is ``{segment: index of the next row to emit}`` over
the segments this task has started and not finished (a segment done, with its progress
written as done, is left out: the position does not grow with every file ever read);
``seek`` reads each listed segment again from its row and every other one from its
committed progress. A task loads and writes the progress of its own segments only. A
listed file that is gone is taken as done when it was done or read to its end (archived or
deleted once processed), and refused with ``SourceTruncatedError`` otherwise, as is one
with fewer rows than its position. Reading a segment again needs its rows in the same
order: files are, a ``query`` must sort. Another task count merges the old tasks'
positions (``merge_positions``): each segment's entry goes to the task that owns it now; a
position saved under an older assignment at the same task count may list segments another
task owns now: ``seek`` hands them over, writing their progress up to the row (never back).

``DataFrameWriterBolt`` (``squall.connectors.dataframe_writer``) gathers tuples into
batches and appends each, acking a batch's tuples only after the write succeeded; in a
stateful topology its writes follow the checkpoints.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from squall.api.components import OutputFieldsDeclarer, SeekableSpout
from squall.api.fields import Fields
from squall.connectors import arrow_io
from squall.connectors.dataframe_writer import (  # noqa: F401 - re-exported: the documented names
    DEAD_LETTER_SCHEMA,
    DataFrameWriterBolt,
    dead_letter_writer,
)
from squall.connectors.engines import (  # noqa: F401 - re-exported
    ENGINES,
    MASTER_KEY,
    check_engine,
    in_spark_executor,
    resolve_engine,
    session,
)
from squall.connectors.files import SourceTruncatedError, write_atomically
from squall.connectors.progress import Watermark
from squall.connectors.reliable import ReliableSpout
from squall.connectors.sharing import owner_of
from squall.runtime import clock

log = logging.getLogger("squall.connectors.spark")

QUERY_SEGMENT = "query"


class DataFrameSpout(ReliableSpout, SeekableSpout):
    """Rows of a DataFrame as tuples (its columns as fields), resumable over acked rows.

    Give ``path`` (with ``format``, ``options``, ``schema`` as ``spark.read`` takes them)
    for a file-based source, read file by file and shared among the spout's tasks by the
    file's path (``squall.connectors.sharing.owner_of``); or ``query``, a picklable
    ``spark -> DataFrame``, read by the spout's first task only. ``fields``: the columns,
    read from the source at build time when not given. ``progress``: the directory for
    committed progress (required). ``follow``: keep looking for new files every
    ``poll_secs`` once all are read.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, progress: str | os.PathLike,
                 format: str = "parquet", options: dict | None = None, schema: str | None = None,
                 query: Callable[[Any], Any] | None = None, fields: Fields | Iterable[str] | None = None,
                 follow: bool = False, poll_secs: float = 1.0, commit_interval_secs: float = 1.0,
                 engine: str = "auto") -> None:
        if (path is None) == (query is None):
            raise ValueError("DataFrameSpout needs exactly one of path= (files Spark reads) "
                             "and query= (a function spark -> DataFrame)")
        check_engine(engine, "DataFrameSpout")
        if engine == "arrow":
            if query is not None:
                raise ValueError("DataFrameSpout: query= needs Spark; engine='arrow' reads path= only")
            arrow_io.check_format(format, "DataFrameSpout")
        self.engine = engine
        self.path = str(path) if path is not None else None
        self.query = query
        self.format, self.options, self.schema = format, dict(options or {}), schema
        self.progress = str(progress)
        self.follow, self.poll_secs = follow, poll_secs
        self.commit_interval_secs = commit_interval_secs
        self.fields: Fields | None = (None if fields is None else
                                      fields if isinstance(fields, Fields) else Fields(*fields))

    # ---- reading through Spark ---------------------------------------------------------------

    def _reader(self, spark: Any) -> Any:
        reader = spark.read.format(self.format).options(**self.options)
        return reader.schema(self.schema) if self.schema else reader

    def _dataframe(self, spark: Any, segment: str | None = None) -> Any:
        if self.query is not None:
            return self.query(spark)
        if segment is None:
            return self._reader(spark).load(self.path)
        # one file, keeping the partition columns of the whole directory
        return self._reader(spark).option("basePath", self.path).load(segment)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """The DataFrame's columns (read from the source once, at build time, if not given)."""
        if self.fields is None:
            if resolve_engine(self.engine, "DataFrameSpout") == "arrow":
                assert self.path is not None
                names = arrow_io.columns(self.path, self.format, self.options, self.schema)
            else:
                names = self._dataframe(session()).columns
            self.fields = Fields(*names)
        declarer.declare(self.fields)

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        """Start a session if needed (engine spark) and load the committed progress."""
        self.using = resolve_engine(self.engine, f"DataFrameSpout {context.component_id!r}")
        if self.using == "arrow":
            if self.query is not None:
                raise ValueError(
                    f"DataFrameSpout {context.component_id!r}: query= needs a SparkSession, which "
                    f"a task in a Spark executor cannot have; give path= (read with pyarrow there)")
            arrow_io.check_format(self.format, f"DataFrameSpout {context.component_id!r}")
            self.spark = None
        else:
            self.spark = session(conf)
        self.index = context.get_this_task_index()
        self.tasks = len(context.get_this_component_tasks())
        self.progress_dir = Path(self.progress)
        self.progress_dir.mkdir(parents=True, exist_ok=True)
        self.done_segments: set[str] = set()
        self.marks: dict[str, Watermark] = {}
        for segment, rows, done in self._load():
            if not self._owns(segment, self.index, self.tasks):
                continue  # another task's: it alone writes that progress
            if done:
                self.done_segments.add(segment)
            else:
                self.marks[segment] = Watermark(rows)
        self.exhausted: set[str] = set()  # read to the end in this run
        self._sought: dict[str, int] = {}  # segments sought to a row: fewer rows is an error
        self._rows: Iterator[tuple[Any, list]] | None = None
        self._queue: list[str] | None = None
        self._next_poll = 0.0
        self._dirty: set[str] = set()
        self._next_commit = clock.monotonic() + self.commit_interval_secs
        self._known: list[str] = []  # this task's segments, as last listed
        register = getattr(context, "register_gauge", None)
        if callable(register):
            register("lag", self.lag)

    @staticmethod
    def _owns(segment: str, index: int, tasks: int) -> bool:
        """Whether task ``index`` of ``tasks`` reads ``segment`` (``_segments``)."""
        if segment == QUERY_SEGMENT:
            return index == 0
        return owner_of(segment, tasks) == index

    def _progress_path(self, segment: str) -> Path:
        # one file per segment, so any task (after a rebalance) finds any segment's progress
        return self.progress_dir / f"{hashlib.sha1(segment.encode()).hexdigest()[:20]}.json"

    def _load(self) -> Iterator[tuple[str, int, bool]]:
        for path in sorted(self.progress_dir.glob("*.json")):
            try:
                saved = json.loads(path.read_text(encoding="utf-8"))
                yield saved["segment"], int(saved["rows"]), bool(saved["done"])
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"DataFrameSpout: {path}: not a progress record: {e}") from None

    def _segments(self) -> list[str]:
        if self.query is not None:
            segments = [QUERY_SEGMENT] if self.index == 0 else []
        else:
            assert self.path is not None
            files = (arrow_io.list_files(self.path) if self.spark is None
                     else sorted(self._dataframe(self.spark).inputFiles()))
            segments = [f for f in files if self._owns(f, self.index, self.tasks)]
        self._known = segments
        return segments

    def next_message(self) -> tuple[Any, list] | None:
        """The next row of the current segment; segments in order, done ones skipped."""
        now = clock.monotonic()
        if now >= self._next_commit:
            self._commit()
            self._next_commit = now + self.commit_interval_secs
        while True:
            if self._rows is not None:
                row = next(self._rows, None)
                if row is not None:
                    return row
                self._rows = None
            if not self._queue:
                if self._queue is not None and (not self.follow or now < self._next_poll):
                    return None
                self._next_poll = now + self.poll_secs
                self._queue = [s for s in self._segments()
                               if s not in self.done_segments and s not in self.exhausted]
                if not self._queue:
                    return None
            self._rows = self._read(self._queue.pop(0))

    def _read(self, segment: str) -> Iterator[tuple[Any, list]]:
        mark = self.marks.setdefault(segment, Watermark())
        skip = mark.position
        # rows in the source's order; the ones under the committed mark are skipped
        if self.spark is None:
            assert self.path is not None
            rows: Iterator[Any] = arrow_io.read_rows(segment, self.path, self.format,
                                                     self.options, self.schema)
        else:
            rows = self._dataframe(self.spark, None if self.query else segment).toLocalIterator()
        count = 0
        for i, row in enumerate(rows):
            count = i + 1
            if i < skip:
                continue
            mark.emitted(i, i + 1)
            yield (segment, i), list(row)
        sought = self._sought.pop(segment, None)
        if sought is not None and count < sought:
            raise SourceTruncatedError(f"{self._who()}: cannot seek to {segment} row {sought}: "
                                       f"it has only {count} rows now")
        self.exhausted.add(segment)
        self._settle(segment)

    # ---- seeking --------------------------------------------------------------------------------

    def _who(self) -> str:
        return f"DataFrameSpout {self._component!r} (task {self.index})"

    def position(self) -> dict[str, int]:
        """Per segment started and not done with its progress written: the next row to emit."""
        done, dirty = self.done_segments, self._dirty
        return {segment: mark.read for segment, mark in self.marks.items()
                if segment not in done or segment in dirty}

    @classmethod
    def merge_positions(cls, positions: list, index: int, tasks: int) -> dict[str, int]:
        """Task ``index`` of ``tasks``: the entries of its segments, from the old tasks' positions."""
        merged: dict[str, int] = {}
        for old in positions:
            for segment, n in (old or {}).items():
                if cls._owns(str(segment), index, tasks):
                    merged[str(segment)] = int(n)
        return merged

    def seek(self, position: dict[str, int]) -> None:
        """Read each listed segment again from its row; the others from their committed progress.

        A listed segment another task reads (a position saved under an older assignment, at
        the same task count: ``merge_positions`` ran only for another count) is handed over:
        its progress catches up to the row, which its owner reads from.
        """
        rows, gone = self._checked(self._hand_over(position))
        self.rewind(lambda m: m[0] in rows and m[1] < rows[m[0]])
        if self._rows is not None:
            self._rows.close()  # type: ignore[attr-defined]
        self._rows, self._queue = None, None
        saved = {segment: (n, done) for segment, n, done in self._load()}
        for segment in [s for s in self.marks if s not in rows]:
            del self.marks[segment]
            self.exhausted.discard(segment)
            self.done_segments.discard(segment)
            n, done = saved.get(segment, (0, False))
            if done:
                self.done_segments.add(segment)
            elif n:
                self.marks[segment] = Watermark(n)
        for segment, n in rows.items():
            mark = self.marks.setdefault(segment, Watermark(n))
            if segment in gone:  # done, then archived or deleted: recorded as done
                mark.seek(n)
                self.exhausted.add(segment)
                self.done_segments.add(segment)
                self._dirty.add(segment)
                continue
            read_all = segment in self.exhausted and mark.read == n
            mark.seek(n)
            self._dirty.add(segment)
            if read_all:
                self._settle(segment)
                continue
            self.exhausted.discard(segment)
            self.done_segments.discard(segment)
            self._sought[segment] = n

    def _hand_over(self, position: Any) -> Any:
        """``position`` without the segments another task reads, whose progress catches up.

        Written before this task emits, never back, and no mark kept: a mark's later commit
        could write an old row over what the owner has done since.
        """
        if not isinstance(position, dict):
            return position  # _checked refuses it, in one line
        mine, saved = {}, None
        for segment, n in position.items():
            if self._owns(str(segment), self.index, self.tasks):
                mine[segment] = n
                continue
            if saved is None:
                saved = {s: (r, d) for s, r, d in self._load()}
            rows, done = saved.get(str(segment), (0, False))
            if int(n) > rows and not done:
                record = {"segment": str(segment), "rows": int(n), "done": False}
                write_atomically(self._progress_path(str(segment)), json.dumps(record) + "\n")
            for held in (self.marks, self._sought):
                held.pop(str(segment), None)
            self._dirty.discard(str(segment))
        return mine

    def _checked(self, position: Any) -> tuple[dict[str, int], set[str]]:
        """The rows to seek to per segment, and the segments among them that are done and gone."""
        if not isinstance(position, dict):
            raise ValueError(f"{self._who()}: cannot seek to {position!r}: not a {{segment: row}} position")
        rows = {}
        gone: set[str] = set()
        saved: dict[str, tuple[int, bool]] | None = None
        for segment, n in position.items():
            segment = str(segment)
            local = segment.startswith("file://") or ":" not in segment
            if segment != QUERY_SEGMENT and local and not os.path.exists(arrow_io.file_path(segment)):
                if saved is None:
                    saved = {s: (r, d) for s, r, d in self._load()}
                mark = self.marks.get(segment)
                if (segment in self.done_segments or saved.get(segment, (0, False))[1]
                        or (segment in self.exhausted and mark is not None and mark.read == int(n))):
                    gone.add(segment)  # done or read to its end, then archived or deleted
                else:
                    raise SourceTruncatedError(f"{self._who()}: cannot seek to {segment} row {n}: "
                                               f"the file no longer exists")
            rows[segment] = int(n)
        return rows, gone

    # ---- progress ------------------------------------------------------------------------------

    def on_done(self, msg_id: Any) -> None:
        """Acked or dead-lettered: move the segment's mark (committed at the next commit)."""
        segment, i = msg_id
        mark = self.marks.get(segment)
        if mark is not None and mark.done(i):
            self._dirty.add(segment)
            self._settle(segment)

    def _settle(self, segment: str) -> None:
        mark = self.marks[segment]
        if segment in self.exhausted and len(mark) == 0 and mark.position == mark.read:
            self.done_segments.add(segment)
            self._dirty.add(segment)

    def _commit(self) -> None:
        for segment in sorted(self._dirty):
            record = {"segment": segment, "rows": self.marks[segment].position,
                      "done": segment in self.done_segments}
            write_atomically(self._progress_path(segment), json.dumps(record) + "\n")
        self._dirty.clear()

    def deactivate(self) -> None:
        """Commit the progress acked so far."""
        self._commit()

    def close(self) -> None:
        """Commit the progress acked so far."""
        self._commit()

    def lag(self) -> int:
        """Segments of this task not yet done (files, or the query), as last listed."""
        return len([s for s in self._known if s not in self.done_segments])


class _Stop(Exception):
    """The spout closed while a micro-batch waited for its rows: the batch is not committed."""


class StreamingDataFrameSpout(ReliableSpout):
    """Rows of a streaming DataFrame as tuples, committed by Spark only once all are done.

    ``stream``: a picklable ``spark -> streaming DataFrame`` (``spark.readStream``: files,
    the rate source, Kafka through Spark's connector where installed). The spout's first task
    runs it as a query whose ``foreachBatch`` hands each micro-batch's rows to the spout and
    returns only once every one of them is acked or dead-lettered, so Spark commits the batch
    (in ``checkpoint``, its own progress) only then. After a crash Spark runs the uncommitted
    batch again: all its rows are replayed, the ones acked before the crash too
    (at-least-once). ``fields``: the columns, read from the stream's schema at build time
    when not given; ``trigger_secs``: the micro-batch interval.
    """

    def __init__(self, stream: Callable[[Any], Any], *, checkpoint: str | os.PathLike,
                 fields: Fields | Iterable[str] | None = None, trigger_secs: float = 0.5) -> None:
        self.stream = stream
        self.checkpoint = str(checkpoint)
        self.trigger_secs = trigger_secs
        self.fields: Fields | None = (None if fields is None else
                                      fields if isinstance(fields, Fields) else Fields(*fields))

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """The streaming DataFrame's columns (its schema, read without starting a query)."""
        if self.fields is None:
            self.fields = Fields(*self.stream(session()).columns)
        declarer.declare(self.fields)

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        """On the first task: start the query (its batches wait for their rows' acks)."""
        self.rows: queue.Queue[tuple[Any, list]] = queue.Queue()
        self._cond = threading.Condition()
        self._open_rows: dict[int, int] = {}  # batch id -> rows not yet done
        self._stopping = False
        self.batches_committed = 0
        self.query: Any = None
        if context.get_this_task_index() != 0:
            return
        if in_spark_executor():
            raise ValueError(
                f"StreamingDataFrameSpout {context.component_id!r}: a streaming query needs a "
                f"SparkSession, which a task in a Spark executor (SparkCluster) cannot have; run "
                f"it on LocalCluster in a Spark driver program, or read the files with DataFrameSpout")
        spark = session(conf)
        self.query = (self.stream(spark).writeStream.foreachBatch(self._batch)
                      .option("checkpointLocation", self.checkpoint)
                      .trigger(processingTime=f"{int(self.trigger_secs * 1000)} milliseconds")
                      .queryName(f"squall-{context.component_id}").start())

    def _batch(self, df: Any, batch_id: int) -> None:
        # on a Spark thread: hand the rows over, then wait until all of them are done
        rows = [list(r) for r in df.collect()]
        with self._cond:
            self._open_rows[batch_id] = len(rows)
        for i, values in enumerate(rows):
            self.rows.put(((batch_id, i), values))
        with self._cond:
            while self._open_rows[batch_id] > 0:
                if self._stopping:
                    raise _Stop(f"batch {batch_id}: spout closed with rows not done")
                self._cond.wait(0.5)
            del self._open_rows[batch_id]
            self.batches_committed += 1

    def next_message(self) -> tuple[Any, list] | None:
        """The next row handed over by the query, or None."""
        if self.query is not None and not self.query.isActive and self.rows.empty():
            error = self.query.exception()
            if error is not None and not self._stopping:
                raise RuntimeError(f"StreamingDataFrameSpout: the query stopped: {error}")
        try:
            return self.rows.get_nowait()
        except queue.Empty:
            return None

    def on_done(self, msg_id: Any) -> None:
        """Acked or dead-lettered: one row fewer for its micro-batch to wait for."""
        batch_id, _ = msg_id
        with self._cond:
            if batch_id in self._open_rows:
                self._open_rows[batch_id] -= 1
                self._cond.notify_all()

    def lag(self) -> int:
        """Rows handed over and not yet done."""
        with self._cond:
            return sum(self._open_rows.values())

    def close(self) -> None:
        """Stop the query; a batch still waiting is not committed (Spark runs it again)."""
        self._stopping = True
        with self._cond:
            self._cond.notify_all()
        if self.query is not None:
            try:
                self.query.stop()
            except Exception as e:  # noqa: BLE001 - stopping anyway
                log.warning("StreamingDataFrameSpout: stopping the query: %s", e)
