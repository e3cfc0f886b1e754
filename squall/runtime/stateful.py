"""Stateful bolts at run time: checkpoint barriers, held acks, and state namespaces.

Every bolt of a topology with stateful bolts receives ``$checkpoint`` tuples from each
upstream task. A stateless bolt forwards a checkpoint once it has it from all of them; a
stateful bolt first prepares, commits or rolls back its state. A stateful bolt's input acks
are held until the checkpoint that covers them commits, and failed on rollback, so the
committed state and the acked tuples always agree (at-least-once).

Namespaces: task ``i`` of component ``c`` in topology ``t`` keeps its state in ``t/c/i``,
the same across restarts and redeploys. When the component's task count changes, a new
generation of namespaces ``t/c/i@gN`` is started and each new task copies from the
previous generation the keys that the fields grouping now routes to it (keys are taken
to be the grouping's values: the value of a one-field grouping, or the list of values).
Earlier generations are left in place, so nothing is lost if a move is interrupted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from squall.api.tuple import Tuple
from squall.runtime.checkpoint import CHECKPOINT_SPOUT, CHECKPOINT_STREAM, Action
from squall.runtime.collectors import OutputCollector
from squall.runtime.hashing import stable_hash
from squall.runtime.tasks import BoltTask

if TYPE_CHECKING:
    from squall.api.context import TopologyContext

HISTORY_KEY = "history"


def state_namespace(topology: str, component: str, index: int, generation: int) -> str:
    """The namespace of one task's state in one generation of the component's tasks."""
    base = f"{topology}/{component}/{index}"
    return base if generation == 0 else f"{base}@g{generation}"


def key_owner(key: Any, num_tasks: int) -> int:
    """Index of the task that owns ``key``: where the fields grouping sends that value."""
    return stable_hash(key) % num_tasks


def task_generation(provider: Any, conf: dict, context: TopologyContext) -> tuple[list[int], Any]:
    """The component's task counts so far (``$tasks``) and the task's current-generation state.

    The last count is this plan's; the state is empty and uncommitted if the generation is new.
    """
    topology, component = context.topology_name, context.component_id
    num_tasks = len(context.get_this_component_tasks())
    meta = provider.new_state(f"{topology}/{component}/$tasks", conf, context)
    history = list(meta.get(HISTORY_KEY) or [])
    if not history or history[-1] != num_tasks:
        # every task of the new plan appends the same entry: concurrent writers agree
        history.append(num_tasks)
        meta.put(HISTORY_KEY, history)
        meta.commit((meta.committed_txid() or 0) + 1)
    generation = len(history) - 1
    state = provider.new_state(state_namespace(topology, component, context.get_this_task_index(),
                                               generation), conf, context)
    return history, state


def needs_move(history: list[int], state: Any) -> bool:
    """Whether ``state`` is of a new generation that has not yet taken its part of the old one."""
    return len(history) > 1 and state.committed_txid() is None and state.prepared_txid() is None


def previous_states(provider: Any, conf: dict, context: TopologyContext, history: list[int]) -> list[Any]:
    """The previous generation's task states, by task index, each settled by the checkpoint record.

    A staged transaction the record says is COMMITTING is committed first (the recovery's
    COMMIT would have committed it in the old task); any other staged one is left alone: it
    is rolled back, so only committed values are copied (``committed_items``).
    """
    from squall.runtime.checkpoint_spout import RECORD_KEY
    from squall.state import load_provider

    topology, component = context.topology_name, context.component_id
    generation = len(history) - 1
    meta: Any = load_provider(conf).new_state(f"{topology}/{CHECKPOINT_SPOUT}", conf, context)
    record = meta.get(RECORD_KEY)
    committing = record[0] if record and record[1] == "COMMITTING" else None
    states = []
    for old in range(history[generation - 1]):
        source = provider.new_state(state_namespace(topology, component, old, generation - 1),
                                    conf, context)
        if committing is not None and source.prepared_txid() == committing:
            source.commit(committing)
        states.append(source)
    return states


def open_task_state(provider: Any, conf: dict, context: TopologyContext) -> Any:
    """Open the task's state, moving its keys in from the previous generation if needed."""
    num_tasks = len(context.get_this_component_tasks())
    index = context.get_this_task_index()
    history, state = task_generation(provider, conf, context)
    if needs_move(history, state):
        for source in previous_states(provider, conf, context, history):
            for key, value in committed_items(source):
                if key_owner(key, num_tasks) == index:
                    state.put(key, value)
        state.commit(0)
    return state


def committed_items(state: Any) -> Any:
    """``state``'s committed pairs: a staged transaction may yet roll back, so it is not copied.

    squall's providers say it (``committed_items``); a user's ``KeyValueState`` that cannot
    is iterated only when nothing is staged, else this raises (the move is retried at the
    next checkpoint, once the staged transaction committed or rolled back).
    """
    items = getattr(state, "committed_items", None)
    if items is not None:
        return items()
    if state.prepared_txid() is not None:
        namespace = getattr(state, "namespace", "")
        raise RuntimeError(f"state {namespace!r} has txid {state.prepared_txid()} staged and its "
                           f"provider cannot list committed values only: the generation move waits")
    return iter(state)


def close_state(task: Any) -> None:
    """Release ``task.state``'s connections, if it opened one; a failure is reported, not raised."""
    if task.state is not None:
        try:
            task.state.close()
        except Exception as e:  # noqa: BLE001 - a store that is down cannot be closed cleanly
            task.host.report_error(task, e)


class MissingStateError(RuntimeError):
    """A task's state is gone although the topology committed checkpoints (RELIABILITY D11)."""


class InconsistentStateError(RuntimeError):
    """The checkpoint record and a task's state disagree (RELIABILITY D11)."""


def check_recovered(state: Any, conf: dict, context: TopologyContext) -> None:
    """Refuse to start a task on a state that was lost or does not match the checkpoints.

    Every task commits at every checkpoint, so once the checkpoint spout's record shows a
    commit each task's state has a committed txid; none means its namespace (partition) was
    lost. (Before the first commit, a task restarted after a rolled back PREPARE has none.)
    A task state with commits while the record is gone means the record was lost. Either
    way the task must not silently start empty: its checkpoints fail with this error.
    """
    from squall.runtime.checkpoint_spout import ORIGIN_KEY, RECORD_KEY, ever_committed
    from squall.state import load_provider

    meta: Any = load_provider(conf).new_state(f"{context.topology_name}/{CHECKPOINT_SPOUT}",
                                              conf, context)
    record = meta.get(RECORD_KEY)
    committed = state.committed_txid()
    # ``namespace`` is squall's providers' own attribute, not KeyValueState's: a user's may lack it
    namespace = getattr(state, "namespace", None)
    where = f"task {context.task_id} of {context.component_id!r}" + (f" ({namespace})" if namespace else "")
    # a task restarted before the topology's first commit has nothing to find, rightly
    if (ever_committed(record, meta.get(ORIGIN_KEY)) and committed is None
            and state.prepared_txid() is None):
        raise MissingStateError(
            f"{where}: its state is missing, but the topology committed checkpoint "
            f"{record[0]}; restore the state store, or kill the topology and clear its state "
            f"to start over")
    if record is None and committed:
        raise InconsistentStateError(
            f"{where}: its state was committed at txid {committed}, but the checkpoint "
            f"spout's record is missing; restore it, or clear the topology's state to start over")


class StatefulOutputCollector(OutputCollector):
    """Holds the acks of a stateful bolt's inputs until their checkpoint commits.

    The hold is the compiled ``OutputCollector.ack``'s: with ``_held`` a list, the ack of a
    tracked tuple not on ``$checkpoint`` is appended to it (checkpoint, tick and untracked
    tuples are acked at once); ``OutputCollector.release`` acks or fails what was taken.
    """

    def __init__(self, task: StatefulBoltTask, routes: dict) -> None:
        super().__init__(task, routes)
        self._held = task.pending  # the task's list, emptied in place at each PREPARE


class StatefulBoltTask(BoltTask):
    """Runs a ``StatefulBolt``: buffers input until ``init_state``, acts on checkpoints."""

    kind = "bolt"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending: list[Tuple] = []  # acked by the bolt since the last prepare
        self.collector = StatefulOutputCollector(self, self.collector._routes)
        self._batched = None  # input waits for init_state one tuple at a time (handle)
        self.prepared: list[Tuple] = []  # covered by the prepared transaction
        self.buffered: list[Tuple] = []  # arrived before init_state
        self.initialized = False
        self.state: Any = None

    def stop(self) -> None:
        """Clean up the bolt, then release the state's connections."""
        super().stop()
        close_state(self)

    def process(self, budget: int) -> int:
        """Once ``init_state`` ran, the bolt task's compiled per-tuple loop; before, ``handle``."""
        if self.initialized:
            return self._process_rich(budget)  # checkpoints and sampled tuples still take handle
        return super().process(budget)

    def handle(self, tup: Tuple) -> None:
        """Checkpoints as in every bolt; other tuples wait for ``init_state``."""
        if tup.stream == CHECKPOINT_STREAM or self.initialized:
            super().handle(tup)
        elif not tup.is_tick():  # ticks before init_state are dropped: the next one will come
            self.buffered.append(tup)

    def checkpoint(self, txid: int, action: Action) -> bool:
        """Prepare, commit, roll back or initialise the state; False fails the checkpoint."""
        bolt: Any = self.bolt
        collector: StatefulOutputCollector = self.collector  # type: ignore[assignment]
        try:
            if self.state is None:
                from squall.state import load_provider

                self.state = open_task_state(load_provider(self.conf), self.conf, self.context)
            if action is Action.INITSTATE:
                if not self.initialized:
                    check_recovered(self.state, self.conf, self.context)
                    bolt.init_state(self.state)
                    self.initialized = True
                    buffered, self.buffered = self.buffered, []
                    for tup in buffered:
                        super().handle(tup)
                return True
            if action is Action.PREPARE:
                if not self.initialized:
                    return False  # restarted since the last checkpoint: recover first
                bolt.pre_prepare(txid)
                self.state.prepare_commit(txid)
                self.prepared += self.pending
                self.pending.clear()  # in place: the collector's hold is this list
            elif action is Action.COMMIT:
                if self.initialized:
                    bolt.pre_commit(txid)
                self.state.commit(txid)
                prepared, self.prepared = self.prepared, []
                collector.release(prepared, ok=True)
            elif action is Action.ROLLBACK:
                if self.initialized:
                    bolt.pre_rollback()
                self.state.rollback()
                held, self.prepared = self.prepared + self.pending, []
                self.pending.clear()
                collector.release(held, ok=False)
        except Exception as e:  # noqa: BLE001 - user hooks and stores: report, fail the checkpoint
            self.host.report_error(self, e)
            if not self.initialized and self.buffered:
                # waiting for a store that is down: let the spouts replay these later
                buffered, self.buffered = self.buffered, []
                for tup in buffered:
                    self.collector.fail(tup)
            return False
        return True
