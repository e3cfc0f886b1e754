"""Spark DataFrames in and out: ``DataFrameSpout`` and ``DataFrameWriterBolt``.

Both need a SparkSession in the process that runs their task: the active one when there is
one (a ``LocalCluster`` in a driver program), else one they start with the master in the
topology key ``squall.connectors.spark.master`` (default ``local[1]``). pyspark is imported
only when a task opens, or when the spout reads its columns at build time.

``DataFrameSpout`` reads a batch source in segments it can resume: each input file of a
file-based source (``path=``, any format Spark reads), or the whole DataFrame a
``query(spark)`` returns (one segment, in its own order: give it an ``orderBy``). A row's msg
id is ``(segment, row index)``; per segment, the count of rows below which every row is
acked (or dead-lettered) is committed atomically to a file of its own in ``progress``, and a
segment read to its end with every row done is recorded as done. A restart skips done
segments and replays each other one from its committed row: at-least-once, duplicates
bounded by what completed after the last commit.

``DataFrameWriterBolt`` gathers tuples into batches and appends each through Spark
(Parquet by default, ``partition_by`` columns), acking a batch's tuples only after the
write succeeded and failing them all when it did not. A replayed tuple is written again:
at-least-once, so give rows an id to deduplicate on when reading.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import shutil
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from squall.api.components import Bolt, OutputFieldsDeclarer
from squall.api.fields import Fields
from squall.api.tuple import Tuple
from squall.connectors.files import write_atomically
from squall.connectors.progress import Watermark
from squall.connectors.reliable import DEAD_LETTER_FIELDS, ReliableSpout
from squall.runtime import clock
from squall.runtime.hashing import stable_hash

log = logging.getLogger("squall.connectors.spark")

MASTER_KEY = "squall.connectors.spark.master"
QUERY_SEGMENT = "query"
# dead letters as a table: msg ids and values as JSON text, whatever their types
DEAD_LETTER_SCHEMA = ("msg_id string, values string, reason string, error string, "
                      "component string, task int, attempts int")


def session(conf: dict | None = None) -> Any:
    """The process's SparkSession: the active one, else one on ``squall.connectors.spark.master``."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    master = (conf or {}).get(MASTER_KEY, "local[1]")
    return (SparkSession.builder.master(master).appName("squall-connectors")
            .config("spark.ui.enabled", "false").getOrCreate())


class DataFrameSpout(ReliableSpout):
    """Rows of a DataFrame as tuples (its columns as fields), resumable over acked rows.

    Give ``path`` (with ``format``, ``options``, ``schema`` as ``spark.read`` takes them)
    for a file-based source, read file by file and shared among the spout's tasks by a
    stable hash of the file name; or ``query``, a picklable ``spark -> DataFrame``, read
    by the spout's first task only. ``fields``: the columns, read from the source at build
    time when not given. ``progress``: the directory for committed progress (required).
    ``follow``: keep looking for new files every ``poll_secs`` once all are read.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, progress: str | os.PathLike,
                 format: str = "parquet", options: dict | None = None, schema: str | None = None,
                 query: Callable[[Any], Any] | None = None, fields: Fields | Iterable[str] | None = None,
                 follow: bool = False, poll_secs: float = 1.0, commit_interval_secs: float = 1.0) -> None:
        if (path is None) == (query is None):
            raise ValueError("DataFrameSpout needs exactly one of path= (files Spark reads) "
                             "and query= (a function spark -> DataFrame)")
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
            self.fields = Fields(*self._dataframe(session()).columns)
        declarer.declare(self.fields)

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        """Start a session if needed and load the committed progress."""
        self.spark = session(conf)
        self.index = context.get_this_task_index()
        self.tasks = len(context.get_this_component_tasks())
        self.progress_dir = Path(self.progress)
        self.progress_dir.mkdir(parents=True, exist_ok=True)
        self.done_segments: set[str] = set()
        self.marks: dict[str, Watermark] = {}
        for segment, rows, done in self._load():
            if done:
                self.done_segments.add(segment)
            else:
                self.marks[segment] = Watermark(rows)
        self.exhausted: set[str] = set()  # read to the end in this run
        self._rows: Iterator[tuple[Any, list]] | None = None
        self._queue: list[str] | None = None
        self._next_poll = 0.0
        self._dirty: set[str] = set()
        self._next_commit = clock.monotonic() + self.commit_interval_secs
        self._known: list[str] = []  # this task's segments, as last listed
        register = getattr(context, "register_gauge", None)
        if callable(register):
            register("lag", self.lag)

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
            files = sorted(self._dataframe(self.spark).inputFiles())
            segments = [f for f in files if stable_hash(f) % self.tasks == self.index]
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
        for i, row in enumerate(self._dataframe(self.spark, None if self.query else segment)
                                .toLocalIterator()):
            if i < skip:
                continue
            mark.emitted(i, i + 1)
            yield (segment, i), list(row)
        self.exhausted.add(segment)
        self._settle(segment)

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


def _jsonable(value: Any) -> str:
    return json.dumps(value, default=repr)


class DataFrameWriterBolt(Bolt):
    """Writes tuples through Spark in batches; acks a batch once it is written.

    ``format`` (default Parquet), ``mode`` ("append"), ``partition_by`` columns and
    ``options`` as ``DataFrame.write`` takes them; ``schema`` (a DDL string) when the types
    cannot be inferred (for example columns that may be None); ``json_columns`` are written
    as JSON text. A batch is written when ``batch_rows`` tuples wait, and on the tick every
    ``flush_secs``. ``fields``: the tuple fields to write (default: all of the first tuple's).
    """

    def __init__(self, path: str | os.PathLike, *, format: str = "parquet", mode: str = "append",
                 partition_by: Iterable[str] = (), options: dict | None = None,
                 schema: str | None = None, json_columns: Iterable[str] = (),
                 fields: Iterable[str] | None = None, batch_rows: int = 1000,
                 flush_secs: float = 1.0) -> None:
        self.path, self.format, self.mode = str(path), format, mode
        self.partition_by = list(partition_by)
        self.options, self.schema = dict(options or {}), schema
        self.json_columns = frozenset(json_columns)
        self.fields = list(fields) if fields is not None else None
        self.batch_rows, self.flush_secs = int(batch_rows), flush_secs

    def get_component_configuration(self) -> dict | None:
        """A tick every ``flush_secs`` writes what waits."""
        return {"topology.tick.tuple.freq.secs": self.flush_secs}

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        """Start a session if needed, and the thread that writes."""
        self.collector = collector
        self.spark = session(conf)
        self.batch: list[Tuple] = []
        self.written = 0
        # Writes run on a thread of their own, one at a time, so that a Spark job (a second
        # or more) does not stall the worker's other tasks; their outcomes are acked or
        # failed on the task's thread, at the next tuple or tick.
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="squall-df-writer")
        self._writes: deque[tuple[Future, list[Tuple]]] = deque()

    def execute(self, tup: Tuple) -> None:
        """Gather the tuple; write the batch when full (or on the tick)."""
        if tup.is_tick():
            self.flush()
        else:
            self.batch.append(tup)
            if len(self.batch) >= self.batch_rows:
                self.flush()
        if self._writes:
            self._settle(block=False)

    def flush(self, wait: bool = False) -> None:
        """Start writing the waiting tuples, unless ``MAX_WRITES`` writes are under way.

        Then the tuples keep waiting and the batch grows until a write finishes (group
        commit: the slower Spark writes, the larger each write), and the task's thread is
        never held; ``topology.max.spout.pending`` bounds the batch. ``wait``: wait for a
        write to finish instead (a graceful stop).
        """
        if not self.batch:
            return
        self._settle(block=False)
        while len(self._writes) >= MAX_WRITES:
            if not wait:
                return
            self._settle(block=True, one=True)
        batch, self.batch = self.batch, []
        names = self.fields if self.fields is not None else list(batch[0].fields)
        rows = [tuple(_jsonable(t[n]) if n in self.json_columns else t[n] for n in names)
                for t in batch]
        self._writes.append((self._pool.submit(self._write, rows, names), batch))

    def _write(self, rows: list[tuple], names: list[str]) -> int:
        df = self.spark.createDataFrame(rows, self.schema or names)
        if self.schema:
            df = df.toDF(*names)
        writer = df.write.format(self.format).mode(self.mode).options(**self.options)
        if self.partition_by:
            writer = writer.partitionBy(*self.partition_by)
        self._save(writer)
        return len(rows)

    def _settle(self, block: bool, one: bool = False) -> None:
        """Ack the batches whose write succeeded, fail those whose write failed (in order)."""
        writes = self._writes
        while writes and (block or writes[0][0].done()):
            future, batch = writes.popleft()
            try:
                self.written += future.result()
            except Exception as e:  # noqa: BLE001 - Spark's errors are many; the batch replays
                text = str(e).splitlines()[0] if str(e) else ""
                self.collector.report_error(RuntimeError(
                    f"DataFrameWriterBolt: writing {len(batch)} rows to {self.path} failed: "
                    f"{type(e).__name__}: {text}"))
                for t in batch:
                    self.collector.fail(t)
            else:
                for t in batch:
                    self.collector.ack(t)
            if one:
                return

    def _save(self, writer: Any) -> None:
        # Two Spark jobs appending to one directory share its _temporary folder, and the
        # first to commit deletes it under the other. On a local path each batch is written
        # to a staging folder of its own and its files moved in (their names are unique);
        # elsewhere the writes of this process to one path take turns.
        local = _local_path(self.path)
        if local is None or self.mode != "append":
            with _path_lock(self.path):
                writer.save(self.path)
            return
        stage = local / STAGING / uuid.uuid4().hex
        try:
            writer.save(str(stage))
            _move_data_files(stage, local)
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def cleanup(self) -> None:
        """Write what waits and wait for the writes (a graceful stop)."""
        self.flush(wait=True)
        self._settle(block=True)
        self._pool.shutdown(wait=True)


MAX_WRITES = 2  # batches being written per task before flush waits for the oldest
STAGING = "_squall_staging"  # a name Spark's readers skip (it starts with "_")
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _path_lock(path: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(path, threading.Lock())


def _local_path(path: str) -> Path | None:
    """The local directory ``path`` names (a plain path or ``file:``), else None."""
    if path.startswith("file:"):  # file:///a/b or file:/a/b
        return Path("/" + path[len("file:"):].lstrip("/"))
    if "://" in path:
        return None
    return Path(path)


def _move_data_files(stage: Path, target: Path) -> None:
    """Move the data files Spark wrote under ``stage`` to the same places under ``target``."""
    for root, dirs, files in os.walk(stage):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        rel = Path(root).relative_to(stage)
        for name in files:
            if name.startswith(("_", ".")):
                continue  # _SUCCESS, checksums
            (target / rel).mkdir(parents=True, exist_ok=True)
            os.replace(Path(root) / name, target / rel / name)


def dead_letter_writer(path: str | os.PathLike, **kwargs: Any) -> DataFrameWriterBolt:
    """A Parquet folder of dead letters: subscribe it to a spout's ``__dead_letter`` stream."""
    kwargs.setdefault("flush_secs", 1.0)
    return DataFrameWriterBolt(path, schema=DEAD_LETTER_SCHEMA, json_columns=("msg_id", "values"),
                               fields=list(DEAD_LETTER_FIELDS), **kwargs)


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
