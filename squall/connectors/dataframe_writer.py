"""``DataFrameWriterBolt``: tuples written in batches through Spark (or pyarrow), acked once written.

Outside a stateful topology each batch is appended to the output as soon as it is written,
and its tuples are acked then: at-least-once (a replayed tuple is written again).

In a stateful topology (one with a checkpoint spout) the runtime runs the writer as a
stateful bolt and its writes follow the checkpoints, as a Storm ``IStatefulBolt``'s state
does: batches are staged (``squall.connectors.staging``), sealed as transaction ``txid`` at
``pre_prepare``, published into the output by renames at ``pre_commit``, and discarded at
``pre_rollback`` and on recovery. Input acks are given once a batch is staged and, as for
every stateful bolt, held by the runtime until the checkpoint commits (failed on
rollback), so the committed output never misses a row whose tree completed and never
holds a row of a rolled-back transaction.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import uuid
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from squall.api.components import Bolt
from squall.api.tuple import Tuple
from squall.connectors import arrow_io
from squall.connectors.engines import check_engine, resolve_engine, session
from squall.connectors.reliable import DEAD_LETTER_FIELDS
from squall.connectors.staging import TxnStaging, move_data_files

log = logging.getLogger("squall.connectors.spark")

# dead letters as a table: msg ids and values as JSON text, whatever their types
DEAD_LETTER_SCHEMA = ("msg_id string, values string, reason string, error string, "
                      "component string, task int, attempts int")
MAX_WRITES = 2  # batches being written per task before flush waits for the oldest
STAGING = "_squall_staging"  # a name Spark's readers skip (it starts with "_")
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _jsonable(value: Any) -> str:
    return json.dumps(value, default=repr)


class DataFrameWriterBolt(Bolt):
    """Writes tuples in batches (through Spark, or pyarrow in a Spark executor); acks once written.

    ``format`` (default Parquet), ``mode`` ("append"), ``partition_by`` columns and
    ``options`` as ``DataFrame.write`` takes them; ``schema`` (a DDL string) when the types
    cannot be inferred (for example columns that may be None); ``json_columns`` are written
    as JSON text. A batch is written when ``batch_rows`` tuples wait, and on the tick every
    ``flush_secs``. ``fields``: the tuple fields to write (default: all of the first tuple's).
    ``engine``: ``auto`` (pyarrow inside a Spark executor, else Spark), ``spark`` or ``arrow``.
    In a stateful topology, writes follow the checkpoints (see the module's docstring).
    """

    # The runtime runs this bolt as a stateful bolt when its topology has checkpoints.
    follows_checkpoints = True

    def __init__(self, path: str | os.PathLike, *, format: str = "parquet", mode: str = "append",
                 partition_by: Iterable[str] = (), options: dict | None = None,
                 schema: str | None = None, json_columns: Iterable[str] = (),
                 fields: Iterable[str] | None = None, batch_rows: int = 1000,
                 flush_secs: float = 1.0, engine: str = "auto") -> None:
        check_engine(engine, "DataFrameWriterBolt")
        if engine == "arrow":
            arrow_io.check_format(format, "DataFrameWriterBolt")
        self.path, self.format, self.mode = str(path), format, mode
        self.partition_by = list(partition_by)
        self.options, self.schema = dict(options or {}), schema
        self.json_columns = frozenset(json_columns)
        self.fields = list(fields) if fields is not None else None
        self.batch_rows, self.flush_secs = int(batch_rows), flush_secs
        self.engine = engine

    def get_component_configuration(self) -> dict | None:
        """A tick every ``flush_secs`` writes what waits."""
        return {"topology.tick.tuple.freq.secs": self.flush_secs}

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        """Start a session if needed, and the thread that writes."""
        who = f"DataFrameWriterBolt {context.component_id!r}"
        self.collector = collector
        self.using = resolve_engine(self.engine, who)
        if self.using == "arrow":
            arrow_io.check_format(self.format, who)
            if self.mode != "append":
                raise ValueError(f"{who}: mode={self.mode!r} needs Spark; pyarrow appends only")
        self.spark = session(conf) if self.using == "spark" else None
        self.who = who
        self.owner = f"{context.component_id}-{context.get_this_task_index()}"
        self.staging: TxnStaging | None = None  # set by init_state: writes follow checkpoints
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
        write to finish instead (a graceful stop, a checkpoint).
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

    # ---- writing (on the writer thread) --------------------------------------------------------

    def _write(self, rows: list[tuple], names: list[str]) -> int:
        staging = self.staging
        if staging is not None:
            # a stateful topology: the batch joins the open transaction once fully written
            folder = staging.new_batch()
            try:
                self._write_folder(rows, names, folder)
                staging.add(folder)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            return len(rows)
        local = _local_path(self.path)
        if local is None or self.mode != "append":
            if self.spark is None:
                raise ValueError(f"{self.who}: {self.path}: pyarrow writes to local paths only")
            with _path_lock(self.path):
                self._spark_writer(rows, names).save(self.path)
            return len(rows)
        # Two Spark jobs appending to one directory share its _temporary folder, and the
        # first to commit deletes it under the other: each batch is written to a folder of
        # its own and its files moved in (their names are unique).
        stage = local / STAGING / uuid.uuid4().hex
        try:
            self._write_folder(rows, names, stage)
            move_data_files(stage, local)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
        return len(rows)

    def _write_folder(self, rows: list[tuple], names: list[str], folder: Path) -> None:
        """Write ``rows`` as a complete dataset in the new folder ``folder``."""
        if self.spark is None:
            arrow_io.write_batch(rows, names, folder, self.format, self.partition_by,
                                 self.options, self.schema)
        else:
            self._spark_writer(rows, names).save(str(folder))

    def _spark_writer(self, rows: list[tuple], names: list[str]) -> Any:
        assert self.spark is not None
        df = self.spark.createDataFrame(rows, self.schema or names)
        if self.schema:
            df = df.toDF(*names)
        writer = df.write.format(self.format).mode(self.mode).options(**self.options)
        if self.partition_by:
            writer = writer.partitionBy(*self.partition_by)
        return writer

    # ---- outcomes (on the task's thread) -------------------------------------------------------

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
                    f"DataFrameWriterBolt: writing {len(batch)} row{'' if len(batch) == 1 else 's'} "
                    f"to {self.path} failed: "
                    f"{type(e).__name__}: {text}"))
                for t in batch:
                    self.collector.fail(t)
            else:
                for t in batch:
                    self.collector.ack(t)
            if one:
                return

    def _drain(self) -> None:
        """Write what waits and wait for every write; their tuples are acked or failed."""
        self.flush(wait=True)
        self._settle(block=True)

    # ---- checkpoints (a stateful topology) -----------------------------------------------------

    def init_state(self, state: Any) -> None:
        """Writes follow checkpoints from now on; finish or discard the transactions left.

        Sealed transactions up to the task's last commit are published (a commit that a
        crash interrupted); later ones, and batches never sealed, are discarded: their
        tuples were never acked, so their spouts replay them.
        """
        local = _local_path(self.path)
        if local is None or self.mode != "append":
            raise ValueError(f"{self.who}: in a stateful topology the output must be a local "
                             f"path written with mode='append' (got {self.path!r}, "
                             f"mode={self.mode!r}): staged files are published by rename")
        self.state = state
        self.staging = TxnStaging(local, self.owner)
        self._recover("starting")

    def _recover(self, why: str) -> None:
        assert self.staging is not None
        committed = self.state.committed_txid()
        moved, dropped = self.staging.recover(committed)
        if moved or dropped:
            log.info("%s (%s): published %d files of transactions up to %s, discarded "
                     "transactions %s", self.who, why, moved, committed, dropped)

    def pre_prepare(self, txid: int) -> None:
        """Write every tuple received so far, then seal them durably as transaction ``txid``."""
        if self.staging is None:
            return
        self._drain()
        self.staging.seal(txid)

    def pre_commit(self, txid: int) -> None:
        """Publish transaction ``txid`` (and any earlier one left) into the output."""
        if self.staging is None:
            return
        self.staging.publish(txid)

    def pre_rollback(self) -> None:
        """Discard what is staged since the last commit; fail the tuples still being written.

        The runtime then fails the tuples whose acks it holds: every row discarded here is
        replayed by its spout.
        """
        if self.staging is None:
            return
        writes, self._writes = list(self._writes), deque()
        for future, batch in writes:
            try:
                future.result()
            except Exception:  # noqa: BLE001 - failed or not, the batch is discarded
                pass
            for t in batch:
                self.collector.fail(t)
        batch, self.batch = self.batch, []
        for t in batch:
            self.collector.fail(t)
        self._recover("rollback")

    def cleanup(self) -> None:
        """Write what waits and wait for the writes (a graceful stop).

        In a stateful topology the last rows stay staged: the next run's recovery publishes
        or discards them as the checkpoints say.
        """
        self._drain()
        self._pool.shutdown(wait=True)


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


def dead_letter_writer(path: str | os.PathLike, **kwargs: Any) -> DataFrameWriterBolt:
    """A Parquet folder of dead letters: subscribe it to a spout's ``__dead_letter`` stream."""
    kwargs.setdefault("flush_secs", 1.0)
    return DataFrameWriterBolt(path, schema=DEAD_LETTER_SCHEMA, json_columns=("msg_id", "values"),
                               fields=list(DEAD_LETTER_FIELDS), **kwargs)
