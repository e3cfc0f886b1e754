"""Operator chaining: which bolts run fused with their upstream, and the fused delivery.

A bolt *D* runs fused with its upstream *U* (one chain link) when all of these hold
(``link_refusal`` names the first that does not):

- chaining is on: ``squall.chaining`` (default True) in the topology's or D's configuration;
- D is a bolt that may be fused: a ``BasicBolt``, or any bolt whose class sets
  ``chainable = True`` (``chainable = False`` opts a ``BasicBolt`` out); stateful, windowed
  and ``AsyncBolt`` bolts never are (their inputs wait in buffers and windows, or on an
  event loop, not in one call);
- D has exactly one input, by shuffle or local-or-shuffle grouping, on a stream that is not
  direct (every other grouping chooses the task by the tuple, which a fixed partner cannot);
- a shuffle input is not one the user asked to keep balanced over every target task
  (``topology.disable.loadaware.messaging: True``): a fixed partner would get it all;
- U is a user spout or bolt whose only consumer is D (a chain is a line: a fan-out's other
  branch would wait until the fused branch ran to its end);
- U and D have the same parallelism and the same number of tasks, so that the k-th task of
  U pairs with the k-th task of D;
- neither runs on a thread of its own (``squall.task.threaded``) or is an ``AsyncBolt``:
  a fused hop runs on the caller's thread;
- D takes no tick tuples (``topology.tick.tuple.freq.secs``): ticks come through a queue;
- the topology is not checkpointed (stateful bolts or ``topology.guarantee: exactly_once``):
  barriers must reach each task through its queue, behind the data they mark.

At run time (``fused.ChainHost``) the k-th task of U hands each tuple it emits on the chained
stream straight to ``handle`` of the k-th task of D when both are in one worker: no queue,
no transfer, no round in between. The tuple is made exactly as a queued one (anchored, with
its root and edge), and D acks or fails it through its own collector, so every tree has
the outcome it has without chaining. A tree emitted by a spout at a chain's head that
completes inside that one call is decided there and never reaches the ackers
(``host.AckScope``). Each task keeps its own metrics, hooks and errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from squall.api.config import (
    TOPOLOGY_DISABLE_LOADAWARE_MESSAGING,
    TOPOLOGY_TICK_TUPLE_FREQ_SECS,
    task_conf,
)
from squall.api.topology import ComponentSpec, StormTopology

CHAINING = "squall.chaining"
THREADED = "squall.task.threaded"
CHAIN_GROUPINGS = ("shuffle", "local_or_shuffle")


@dataclass(frozen=True)
class ChainLink:
    """``downstream`` runs fused with ``upstream``, whose ``stream`` it subscribes to."""

    upstream: str
    stream: str
    downstream: str


def _system(cid: str) -> bool:
    return cid.startswith(("$", "__"))


def _checkpointed(topology: StormTopology, conf: dict) -> bool:
    return topology.stateful or conf.get("topology.guarantee") == "exactly_once" or any(
        inp.stream == "$checkpoint" for c in topology.components.values() for inp in c.inputs)


def _threaded(spec: ComponentSpec, conf: dict) -> bool:
    return bool(task_conf(conf, spec.conf).get(THREADED, conf.get(THREADED)))


def link_refusal(topology: StormTopology, conf: dict, counts: Mapping[str, tuple[int, int]],
                 cid: str) -> str | ChainLink:
    """The link that fuses component ``cid`` into its upstream, or why it is not fused.

    ``counts`` is each component's (tasks, executors) as planned.
    """
    d = topology.components[cid]
    own = task_conf(conf, d.conf)
    if own.get(CHAINING, True) is False:
        return f"{CHAINING} is False"
    if d.kind != "bolt" or _system(cid):
        return "not a user bolt"
    if d.stateful:
        return "a stateful bolt"
    if d.asynchronous:
        return "an AsyncBolt"
    if not d.chainable:
        return "neither a BasicBolt nor chainable = True (windowed and rich bolts are not)"
    if len(d.inputs) != 1:
        return f"{len(d.inputs)} inputs (a chained bolt has one)"
    inp = d.inputs[0]
    if inp.grouping.kind not in CHAIN_GROUPINGS:
        return f"{inp.grouping.kind} grouping (only shuffle and local-or-shuffle chain)"
    if inp.grouping.kind == "shuffle" and conf.get(TOPOLOGY_DISABLE_LOADAWARE_MESSAGING):
        return (f"a balanced shuffle ({TOPOLOGY_DISABLE_LOADAWARE_MESSAGING}: True keeps it over "
                f"every target task)")
    u = topology.components[inp.component]
    if _system(u.id):
        return f"its upstream {u.id!r} is a system component"
    sdef = u.streams.get(inp.stream)
    if sdef is not None and sdef.direct:
        return f"stream {inp.stream!r} is direct"
    consumers = [c.id for c in topology.components.values()
                 for i in c.inputs if i.component == u.id]
    if len(consumers) != 1:
        return f"its upstream {u.id!r} has {len(consumers)} subscriptions (a chain is a line)"
    if counts[u.id] != counts[cid]:
        (ut, ue), (dt, de) = counts[u.id], counts[cid]
        return (f"parallelism differs from its upstream {u.id!r} ({de} executors and {dt} tasks "
                f"vs {ue} and {ut})")
    if _threaded(d, conf) or _threaded(u, conf):
        return f"it or its upstream {u.id!r} runs on a thread of its own ({THREADED})"
    if u.asynchronous:
        return f"its upstream {u.id!r} is an AsyncBolt"
    if own.get(TOPOLOGY_TICK_TUPLE_FREQ_SECS):
        return f"it takes tick tuples ({TOPOLOGY_TICK_TUPLE_FREQ_SECS})"
    if _checkpointed(topology, conf):
        return "the topology is checkpointed (barriers travel through queues)"
    return ChainLink(u.id, inp.stream, cid)


def plan_links(topology: StormTopology, conf: dict,
               counts: Mapping[str, tuple[int, int]]) -> dict[str, ChainLink]:
    """Downstream component -> its chain link, for every bolt that runs fused (pure)."""
    links = {}
    for cid in sorted(topology.components):
        link = link_refusal(topology, conf, counts, cid)
        if isinstance(link, ChainLink):
            links[cid] = link
    return links


def chains_of(links: Mapping[str, ChainLink]) -> list[list[str]]:
    """The chains the links make, each from its head (a component not fused into another)."""
    after = {link.upstream: down for down, link in links.items()}
    chains = []
    for head in sorted(set(after) - set(links)):
        chain = [head]
        while chain[-1] in after:
            chain.append(after[chain[-1]])
        chains.append(chain)
    return chains


def plan_chains(topology: StormTopology, conf: dict,
                counts: Mapping[str, tuple[int, int]]) -> list[list[str]]:
    """The chains of ``topology``: ``[["map1", "map2", "map3"]]`` (pure; see the module)."""
    return chains_of(plan_links(topology, conf, counts))


def partners(links: Mapping[str, ChainLink], component_tasks: Mapping[str, list[int]],
             local: set[int]) -> dict[int, tuple[str, int]]:
    """Upstream task -> (its chained stream, the downstream task it feeds in place).

    The k-th task of the upstream pairs with the k-th task of the downstream; a pair is
    fused only when both tasks are in this worker (``local``). A pair a scheduler placed in
    two workers keeps the ordinary grouping.
    """
    out = {}
    for down, link in links.items():
        ups, downs = component_tasks[link.upstream], component_tasks[down]
        for u, d in zip(ups, downs, strict=True):
            if u in local and d in local:
                out[u] = (link.stream, d)
    return out


def links_of(chains: list[list[str]], topology: StormTopology) -> dict[str, ChainLink]:
    """The links of planned ``chains`` (a ``TaskPlan``'s), each downstream by its one input."""
    links = {}
    for chain in chains:
        for down in chain[1:]:
            inp = topology.components[down].inputs[0]
            links[down] = ChainLink(inp.component, inp.stream, down)
    return links


def chain_by_component(chains: list[list[str]]) -> dict[str, list[str]]:
    """Each chained component -> the whole chain it runs in (head first), for reports."""
    return {cid: list(chain) for chain in chains for cid in chain}
