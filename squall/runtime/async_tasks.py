"""Running ``AsyncBolt`` tasks: calls on an asyncio event loop of the worker.

The worker's loop thread takes a task's input (at most ``capacity`` calls in flight) and
starts each call on the event loop, which runs on a thread of its own. A call's collector
work (emits, acks, fails) is recorded, not done: ``AsyncHost`` keeps one list of records per
call (a context variable: each call is an asyncio task with its own context). When calls
complete, the loop thread replays their records, in input order when ``ordered``, so
routing, acking and backpressure stay the worker's, as for tasks on its loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from collections import deque
from concurrent.futures import Future
from typing import Any

from squall.api.asyncbolt import AsyncBolt
from squall.api.context import TopologyContext
from squall.api.tuple import Tuple
from squall.runtime.checkpoint import CHECKPOINT_STREAM
from squall.runtime.collectors import StreamRoute
from squall.runtime.tasks import BoltTask
from squall.runtime.threads import DeferredHost, Loop, detach, replay

log = logging.getLogger("squall.async")
_SINK: contextvars.ContextVar[list[tuple] | None] = contextvars.ContextVar("squall_sink", default=None)
START_TIMEOUT = 60.0


class AsyncTimeoutError(TimeoutError):
    """An ``AsyncBolt`` call took longer than the bolt's ``timeout``; its tuple was failed."""


class AsyncRunner:
    """One asyncio event loop on a thread of its own, shared by a worker's async tasks."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Any) -> Future:
        """Start ``coro`` on the loop; a future for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self, timeout: float = 5.0) -> None:
        """Cancel what still runs and stop the loop."""
        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if self.thread.is_alive():
            try:
                self.submit(cancel_all()).result(timeout)
            except Exception as e:  # noqa: BLE001 - shutting down: log and go on
                log.warning("async tasks did not cancel cleanly: %s", e)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout)
        if not self.thread.is_alive():
            self.loop.close()


def async_runner(worker: Any) -> AsyncRunner:
    """The event loop of ``worker``'s async tasks, started on first use (one per worker)."""
    runner: AsyncRunner | None = getattr(worker, "aio", None)
    if runner is None:
        runner = worker.aio = AsyncRunner(f"squall-async-{worker.index}")
    return runner


def close_async_runner(worker: Any) -> None:
    """Cancel ``worker``'s async calls in flight and stop their event loop (idempotent)."""
    runner: AsyncRunner | None = getattr(worker, "aio", None)
    if runner is not None:
        runner.close()
        worker.aio = None


class AsyncHost(DeferredHost):
    """The worker as an async task sees it: records go to the current call's list."""

    def sink(self) -> list[tuple]:
        """The current call's records, or the host's own outside calls."""
        records = _SINK.get()
        return self.records if records is None else records


class AsyncBoltTask(BoltTask):
    """Runs an ``AsyncBolt``: calls in flight on the event loop, results replayed in order."""

    kind = "bolt"

    def __init__(self, worker: Loop, task_id: int, component: str, context: TopologyContext,
                 conf: dict, bolt: AsyncBolt, routes: dict[str, StreamRoute]) -> None:
        super().__init__(worker, task_id, component, context, conf, bolt, routes)  # type: ignore[arg-type]
        self.real = worker
        self.deferred = AsyncHost(worker)
        detach(self, self.deferred)
        self.capacity = max(1, int(bolt.capacity))
        self.timeout = float(bolt.timeout)
        self.ordered = bool(bolt.ordered)
        self.in_flight = 0
        self._seq = 0
        self._released = 0
        self._finished: deque[tuple[int, list[tuple]]] = deque()  # filled by the event loop
        self._ready: dict[int, list[tuple]] = {}  # ordered: finished out of turn
        self.runner: AsyncRunner | None = None

    def start(self) -> None:
        """Prepare the bolt, then ``prepare_async`` on the worker's event loop."""
        super().start()
        self.runner = async_runner(self.real)
        self.owner = self.runner.thread.ident or 0  # execute runs on the event loop's thread
        bolt: Any = self.bolt
        self.runner.submit(self._prepare_async(bolt)).result(START_TIMEOUT)

    async def _prepare_async(self, bolt: Any) -> None:
        await bolt.prepare_async(self.conf, self.context)

    def pump(self) -> int:
        """On the loop thread: replay finished calls, then start calls while there is room."""
        work = 0
        finished = self._finished
        while finished:
            seq, records = finished.popleft()
            self.in_flight -= 1
            self.metrics.executed += 1
            if self.ordered:
                self._ready[seq] = records
            else:
                work += replay(self.real, records) + 1
        if self.ordered:
            ready = self._ready
            while self._released in ready:
                work += replay(self.real, ready.pop(self._released)) + 1
                self._released += 1
        stray = self.deferred.take()  # records made outside any call (prepare_async)
        if stray:
            work += replay(self.real, stray)
        inbox = self.inbox
        runner = self.runner
        assert runner is not None
        while inbox and self.in_flight < self.capacity:
            tup = inbox.popleft()
            seq = self._seq
            self._seq += 1
            self.in_flight += 1
            runner.submit(self._call(seq, tup))
            work += 1
        return work

    def process(self, budget: int) -> int:
        """The worker drives async tasks with ``pump``."""
        return self.pump()

    def drain(self) -> int:
        """Once a round, on the loop thread: ``pump``."""
        return self.pump()

    def after_round(self) -> None:
        """Nothing to wake: calls in flight wake the loop when they finish."""

    def idle(self) -> bool:
        """No call in flight and nothing waiting to be replayed."""
        return self.in_flight == 0 and not self._finished and not self._ready

    async def _call(self, seq: int, tup: Tuple) -> None:
        records: list[tuple] = []
        _SINK.set(records)  # this asyncio task's own context (its child task copies it)
        hooks = self.hooks  # task hooks: the call is timed from its start to its end
        if hooks is not None:
            t0 = self.real.clock()
            tup._t0 = t0 or 1e-9
        try:
            if tup.stream == CHECKPOINT_STREAM:
                self._on_checkpoint_tuple(tup)
            else:
                await self._execute(tup)
                if hooks is not None:
                    hooks.bolt_execute(tup, (self.real.clock() - t0) * 1000.0)
        except asyncio.CancelledError:
            raise  # shutting down: the tuple's tree times out upstream and replays
        except Exception as e:  # noqa: BLE001 - user code: report, fail the input
            self.real.report_error(self, e)
            self.collector.fail(tup)
            if hooks is not None:
                hooks.bolt_execute(tup, (self.real.clock() - t0) * 1000.0)
        finally:
            self._finished.append((seq, records))
            self.real.transport.wake()

    async def _execute(self, tup: Tuple) -> None:
        """The user's ``execute``, cancelled after ``timeout`` (told apart from its own errors)."""
        bolt: Any = self.bolt
        call = asyncio.ensure_future(bolt.execute(tup))
        done, _ = await asyncio.wait({call}, timeout=self.timeout)
        if done:
            call.result()  # the user's own exception, if any
            return
        call.cancel()
        await asyncio.gather(call, return_exceptions=True)
        self.real.report_error(self, AsyncTimeoutError(
            f"component {self.component!r} task {self.task_id}: execute did not finish within "
            f"{self.timeout}s (AsyncBolt.timeout); its tuple was failed"))
        self.collector.fail(tup)

    def stop(self) -> None:
        """Cancel calls in flight (their trees replay), then clean up on the loop thread."""
        if self.runner is not None:
            close_async_runner(self.real)
        super().stop()
