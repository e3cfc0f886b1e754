"""Stateful bolts at run time: checkpoint barriers, held acks, and state namespaces.

Every bolt of a topology with stateful bolts receives ``$checkpoint`` tuples from each
upstream task. A stateless bolt forwards a checkpoint once it has it from all of them; a
stateful bolt first prepares, commits or rolls back its state. A stateful bolt's input acks
are held until the checkpoint that covers them commits, and failed on rollback, so the
committed state and the acked tuples always agree (at-least-once).

Namespaces. A stateful bolt whose inputs are all fields groupings keeps its state by key
group (``squall.state.keygrouped``): key group ``g`` of component ``c`` in topology ``t`` is
namespace ``t/c/kg/<g>``, owned by the task the routing table gives it
(``keygroups.default_table``), so a change of the task count moves key groups, not keys.
Every other stateful bolt (fed by a shuffle or another grouping, a windowed bolt) keeps
one namespace per task, ``t/c/i``; when the component's task count changes, a new
generation ``t/c/i@gN`` is started and each new task copies from the previous generation
the keys that the fields grouping would route to it. A component's state kept per task by
an earlier squall moves into key groups on its first start (``migrate``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from squall.api.tuple import Tuple
from squall.runtime.checkpoint import CHECKPOINT_SPOUT, CHECKPOINT_STREAM, Action
from squall.runtime.collectors import OutputCollector
from squall.runtime.hashing import stable_hash
from squall.runtime.keygroups import KEY_GROUPS, default_table, num_key_groups, owned_groups
from squall.runtime.tasks import BoltTask
from squall.state.keygrouped import committed_items

if TYPE_CHECKING:
    from squall.api.context import TopologyContext

HISTORY_KEY = "history"
KEY_GROUPS_KEY = "key_groups"  # the component's K, once its state is kept by key group
LEGACY_KEY = "legacy"  # [generation, tasks] of the per-task layout its key groups came from


def state_namespace(topology: str, component: str, index: int, generation: int) -> str:
    """The namespace of one task's state in one generation of the component's tasks."""
    base = f"{topology}/{component}/{index}"
    return base if generation == 0 else f"{base}@g{generation}"


def key_owner(key: Any, num_tasks: int, key_groups: int | None = None) -> int:
    """Index of the task that owns ``key``: where the fields grouping sends that value.

    ``key_groups`` is ``topology.key.groups`` (None: its default); the key's key group goes
    to the task the default routing table gives it.
    """
    k = num_key_groups(None) if key_groups is None else key_groups
    group = stable_hash(key) % k
    return group * num_tasks // k  # default_table's entry for the group, without the table


class KeyGroupsChangedError(ValueError):
    """``topology.key.groups`` differs from the K a component's state is kept in."""


def keyed_component(context: TopologyContext, bolt: Any = None) -> bool:
    """Whether the component's state follows key groups: every input a fields grouping.

    A bolt class may say ``keyed_state = False`` (a windowed bolt's state is not by key);
    a sink that follows checkpoints (``follows_checkpoints``) is not keyed either.
    """
    kind = type(bolt)
    if getattr(kind, "keyed_state", True) is False or getattr(kind, "follows_checkpoints", False) is True:
        return False
    sources = getattr(context, "get_this_sources", None)
    if sources is None:  # a context without a topology (a test's): nothing says it is keyed
        return False
    inputs = [g for (_, stream), g in sources().items() if stream != CHECKPOINT_STREAM]
    return bool(inputs) and all(g is not None and g.kind == "fields" for g in inputs)


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


def open_task_state(provider: Any, conf: dict, context: TopologyContext, bolt: Any = None) -> Any:
    """Open the task's state: by key group for a keyed component, else per task (see the module)."""
    if bolt is not None and (keyed_component(context, bolt) or kept_by_key_group(provider, conf, context)):
        return open_keyed_state(provider, conf, context)
    num_tasks = len(context.get_this_component_tasks())
    index = context.get_this_task_index()
    history, state = task_generation(provider, conf, context)
    if needs_move(history, state):
        k = num_key_groups(conf)
        for source in previous_states(provider, conf, context, history):
            for key, value in committed_items(source):
                if key_owner(key, num_tasks, k) == index:
                    state.put(key, value)
        state.commit(0)
    return state


def kept_by_key_group(provider: Any, conf: dict, context: TopologyContext) -> bool:
    """Whether the component's state is already kept by key group (its ``$tasks`` says K)."""
    meta = provider.new_state(f"{context.topology_name}/{context.component_id}/$tasks", conf, context)
    return meta.get(KEY_GROUPS_KEY) is not None


def open_keyed_state(provider: Any, conf: dict, context: TopologyContext) -> Any:
    """The task's ``KeyGroupedState``, its key groups settled when the plan changed.

    The component's ``$tasks`` record keeps K (``topology.key.groups`` cannot change over
    existing state: ``KeyGroupsChangedError``) and the task counts; a task that starts a new
    plan (``take_over``) settles its key groups' staged transactions by the checkpoint
    record and moves in what an earlier squall kept per task (``migrate``).
    """
    from squall.state.keygrouped import KeyGroupedState, record_namespace

    topology, component = context.topology_name, context.component_id
    prefix = f"{topology}/{component}"
    num_tasks = len(context.get_this_component_tasks())
    index = context.get_this_task_index()
    k = num_key_groups(conf)
    meta = provider.new_state(f"{prefix}/$tasks", conf, context)
    history = list(meta.get(HISTORY_KEY) or [])
    recorded = meta.get(KEY_GROUPS_KEY)
    if recorded is not None and recorded != k:
        raise KeyGroupsChangedError(
            f"{KEY_GROUPS} of topology {topology!r} is {k}, but the state of {component!r} is kept "
            f"in {recorded} key groups; it cannot change over existing state: set it back to "
            f"{recorded}, or clear the topology's state")
    if num_tasks > k:
        raise KeyGroupsChangedError(f"{component!r} has {num_tasks} tasks, more than its {k} key "
                                    f"groups ({KEY_GROUPS})")
    changed = False
    if recorded is None:
        meta.put(KEY_GROUPS_KEY, k)
        if history:  # an earlier squall kept this state per task: move it in
            meta.put(LEGACY_KEY, [len(history) - 1, history[-1]])
        changed = True
    if not history or history[-1] != num_tasks:
        history.append(num_tasks)  # every task of the new plan appends the same entry
        meta.put(HISTORY_KEY, history)
        changed = True
    if changed:
        meta.commit((meta.committed_txid() or 0) + 1)
    legacy = meta.get(LEGACY_KEY)
    generation = len(history) - 1
    record = provider.new_state(record_namespace(prefix, index, generation), conf, context)
    sibling = getattr(record, "sibling", None)
    opener = sibling if sibling is not None else (lambda ns: provider.new_state(ns, conf, context))
    groups = owned_groups(default_table(num_tasks, k), index)
    state = KeyGroupedState(opener, prefix, index, k, groups, record, stable_hash)
    if record.committed_txid() is None and (generation > 0 or legacy):
        take_over(state, provider, conf, context, history, legacy)
    return state


def checkpoint_committing(provider: Any, conf: dict, context: TopologyContext) -> int | None:
    """The txid the checkpoint record says is COMMITTING (recovery commits it), else None."""
    from squall.runtime.checkpoint_spout import RECORD_KEY
    from squall.state import load_provider

    meta: Any = load_provider(conf).new_state(f"{context.topology_name}/{CHECKPOINT_SPOUT}",
                                              conf, context)
    record = meta.get(RECORD_KEY)
    return record[0] if record and record[1] == "COMMITTING" else None


def take_over(state: Any, provider: Any, conf: dict, context: TopologyContext,
              history: list[int], legacy: list[int] | None) -> None:
    """Settle a new plan's task state: staged transactions of its key groups, migration.

    A key group staged by its old owner is committed if the checkpoint record says that
    txid is COMMITTING (the recovery's COMMIT would have committed it there), else rolled
    back (the recovery rolls it back). Task index 0 also settles the own namespaces of
    task indexes the new plan no longer has. Then the task's record says committed 0.
    """
    from squall.state.base import apply_all, txids_all
    from squall.state.keygrouped import OTHER, task_namespace

    committing = checkpoint_committing(provider, conf, context)
    groups = state.key_groups()
    states = state.open_states([*groups, OTHER])
    if state.index == 0:
        prefix, num_tasks = state.prefix, len(context.get_this_component_tasks())
        states += [provider.new_state(task_namespace(prefix, i), conf, context)
                   for i in range(num_tasks, max(history))]
    txids = txids_all(states)
    apply_all([(s, "commit" if prepared == committing else "rollback", prepared)
               for s, (_, prepared) in zip(states, txids, strict=True) if prepared is not None])
    written = {g for g, (committed, prepared) in zip(groups, txids, strict=False)
               if committed is not None or (prepared is not None and prepared == committing)}
    if legacy:
        moved = [g for g in groups if g not in written]
        migrate(state, provider, conf, context, legacy, moved, committing)
        written.update(moved)
    state.mark_committed(0, written)


def migrate(state: Any, provider: Any, conf: dict, context: TopologyContext, legacy: list[int],
            groups: list[int], committing: int | None) -> None:
    """Copy into ``groups`` (owned, never committed) their keys from the per-task layout.

    ``legacy`` is the last per-task generation and its task count. Only committed values are
    copied (a staged transaction the checkpoint record says is COMMITTING is committed in
    the old namespace first, as the recovery would have; another is rolled back there only
    if its provider cannot list committed values alone); the old namespaces are not
    changed otherwise. Each migrated key group is committed as txid 0, so a migration
    interrupted midway resumes with the key groups not yet committed, and a key group that
    has taken new changes since is never overwritten.
    """
    from squall.state.base import apply_all

    if not groups:
        return
    generation, tasks = legacy
    wanted = set(groups)
    targets = dict(zip(groups, state.open_states(groups), strict=True))
    topology, component = context.topology_name, context.component_id
    for old in range(tasks):
        source = provider.new_state(state_namespace(topology, component, old, generation), conf, context)
        staged = source.prepared_txid()
        if staged is not None and staged == committing:
            source.commit(committing)
        elif staged is not None and getattr(source, "committed_items", None) is None:
            source.rollback()  # the recovery rolls it back; a user's state lists no committed only
        for key, value in committed_items(source):
            group = state.key_group_of(key)
            if group in wanted:
                targets[group].put(key, value)
        close = getattr(source, "close", None)
        if close is not None:
            close()
    apply_all([(targets[g], "commit", 0) for g in groups])


def component_items(provider: Any, conf: dict, topology: str, component: str) -> Any:
    """``(namespace, key, value)`` of every committed pair of a component's state, any layout.

    By key group: each key group's namespace, then each task index's own; per task: the
    current generation's task namespaces. For tools and tests that read a stopped
    topology's state from its store.
    """
    from squall.state.keygrouped import group_namespace, task_namespace

    meta = provider.new_state(f"{topology}/{component}/$tasks", conf, None)
    history = meta.get(HISTORY_KEY) or []
    k = meta.get(KEY_GROUPS_KEY)
    if k is None:
        generation = len(history) - 1
        names = [state_namespace(topology, component, i, generation) for i in range(history[-1])] \
            if history else []
    else:
        prefix = f"{topology}/{component}"
        names = [group_namespace(prefix, g) for g in range(k)]
        # read while the first tasks start, K can be there before their task count
        names += [task_namespace(prefix, i) for i in range(max(history, default=0))]
    sibling = getattr(meta, "sibling", None)
    for name in names:
        state = sibling(name) if sibling is not None else provider.new_state(name, conf, None)
        for key, value in committed_items(state):
            yield name, key, value


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
    missing = getattr(state, "missing_key_groups", None)
    if missing is not None and ever_committed(record, meta.get(ORIGIN_KEY)):
        lost = missing()
        if lost:
            raise MissingStateError(
                f"{where}: its state is missing (key groups {lost[:10]}"
                f"{' ...' if len(lost) > 10 else ''}), but the topology committed checkpoint "
                f"{record[0]}; restore the state store, or kill the topology and clear its "
                f"state to start over")
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

                self.state = open_task_state(load_provider(self.conf), self.conf, self.context,
                                             self.bolt)
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
