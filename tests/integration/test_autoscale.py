"""The autoscaler on LocalCluster: decisions from the topology's own figures, applied by a
rebalance in ``apply`` mode, only shown in ``recommend`` mode (API.md: Rescaling).

The policy's arithmetic is tested on a simulated topology in tests/unit/test_autoscale_policy.py.
Here the figures come from running tasks, so the cluster runs in real time: a rate is tuples
per real second and a task's useful time is real time in ``execute`` (in simulated time the
window is simulated and the execute time real, and the two do not divide). The count bolt
spends a fixed 2 ms per tuple on one task behind an endless spout: busy all the time, so
whatever the machine's speed the decision is to double it (the factor's cap). The tests wait
for a decision by polling ``get_topology_info`` with a deadline (the cluster's own thread
looks at the figures every second); nothing is asserted about time.
"""

from __future__ import annotations

import time

import pytest

from squall import BasicBolt, Fields, LocalCluster, Spout, TopologyBuilder
from squall.api.errors import InvalidTopologyError
from tests.integration.components import SplitBolt

NAME = "autoscaled"


class EndlessSpout(Spout):
    """The same few sentences again and again, unanchored (no acks to wait for)."""

    def open(self, conf, context, collector):
        self.collector = collector
        self.i = 0

    def next_tuple(self):
        self.i += 1
        self.collector.emit([f"the quick brown fox {self.i % 7}"])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("sentence"))


class BusyCount(BasicBolt):
    """Counts words, spending 2 ms of CPU on each (a costly bolt)."""

    def prepare(self, conf, context):
        self.counts: dict[str, int] = {}

    def execute(self, tup, collector):
        until = time.perf_counter() + 0.002
        while time.perf_counter() < until:
            pass
        self.counts[tup[0]] = self.counts.get(tup[0], 0) + 1

    def declare_output_fields(self, declarer):
        pass


def build(count_parallelism: int = 1, count_conf: dict | None = None):
    b = TopologyBuilder()
    b.set_spout("spout", EndlessSpout(), 1)
    b.set_bolt("split", SplitBolt(), 1).shuffle_grouping("spout")
    count = b.set_bolt("count", BusyCount(), count_parallelism).fields_grouping("split", Fields("word"))
    for k, v in (count_conf or {}).items():
        count.add_configuration(k, v)
    return b.create_topology()


def conf(**more) -> dict:
    return {"topology.autoscale": True, "topology.autoscale.interval.secs": 2,
            "squall.metrics.window.secs": 1, "squall.chaining": False, **more}


def run(conf: dict, topology, decisions: int = 1, deadline_secs: float = 60.0,
        windows: int | None = None, until=None) -> dict:
    """Run until the autoscaler made ``decisions`` decisions with changes (or the deadline).

    ``windows``: run until it looked at that many windows instead (a test that expects no
    change must not pass for want of a look); ``until``: run until it holds of the info.
    """
    with LocalCluster() as cluster:
        cluster.submit_topology(NAME, conf, topology)
        deadline = time.monotonic() + deadline_secs
        while time.monotonic() < deadline:
            info = cluster.get_topology_info(NAME)
            done = [d for d in info["autoscale"]["decisions"]
                    if d["changes"] and (d["applied"] or d["mode"] == "recommend" or "note" in d)]
            if until is not None:
                if until(info):
                    break
            elif (len(done) >= decisions if windows is None
                    else info["autoscale"]["windows"] >= windows):
                break
            time.sleep(0.2)
        info = cluster.get_topology_info(NAME)
        cluster.kill_topology(NAME)
    return info


def test_apply_mode_rescales_what_the_decision_says():
    info = run(conf(), build())
    decisions = info["autoscale"]["decisions"]
    assert info["autoscale"]["mode"] == "apply"
    applied = [d for d in decisions if d["applied"]]
    assert applied, decisions
    first = applied[0]
    assert first["changes"] == {"count": [1, 2]}  # busy all the time: doubled, the factor's cap
    assert "count 1->2" in first["reason"]
    assert first["target_rates"]["count"] > 0
    assert 0 < first["true_rates"]["count"] <= 520  # at least 2 ms a tuple
    assert len(info["components"]["count"]["tasks"]) == 2
    # a stateless bolt rescales live (docs/state.md, "Live rescale"): no worker restarted
    assert first["live"] is True and "note" not in first, first
    assert info["rescale"]["live"] is True and info["rescale"]["components"] == {"count": [1, 2]}


def test_recommend_mode_shows_the_decision_and_changes_nothing():
    info = run(conf(**{"topology.autoscale.mode": "recommend"}), build())
    decisions = info["autoscale"]["decisions"]
    assert decisions and all(not d["applied"] for d in decisions)
    assert any(d["changes"].get("count") == [1, 2] for d in decisions)
    assert len(info["components"]["count"]["tasks"]) == 1


def test_the_max_parallelism_of_a_component_is_kept():
    topology = build(count_conf={"topology.autoscale.max.parallelism": 1})
    info = run(conf(), topology, windows=3)
    assert info["autoscale"]["windows"] >= 3  # looked at saturated figures three times
    assert all("count" not in d["changes"] for d in info["autoscale"]["decisions"])
    # the last window is shown with its figures though it changed nothing for count
    last = info["autoscale"]["last_window"]
    assert "count" not in last["changes"] and last["true_rates"]["count"] > 0, last
    assert last["time"] >= max((d["time"] for d in info["autoscale"]["decisions"]), default=0)
    assert len(info["components"]["count"]["tasks"]) == 1


def test_a_component_that_cannot_be_rescaled_live_is_named_and_left():
    # a bolt on a thread of its own does not rescale live: the decision never restarts
    # until a decision names it: on a loaded machine the first saturated window can come late
    def named(info):
        return any("count" in d["left"] for d in info["autoscale"]["decisions"])

    info = run(conf(), build(count_conf={"squall.task.threaded": True}), until=named)
    left = [d for d in info["autoscale"]["decisions"] if "count" in d["left"]]
    assert left, info["autoscale"]
    assert "cannot be rescaled live" in left[0]["left"]["count"] and "thread" in left[0]["left"]["count"]
    assert all("count" not in d["changes"] for d in info["autoscale"]["decisions"])
    # split may be saturated too (the plain-Python pass, a loaded machine) and grow live: only
    # count must stay as it was
    assert len(info["components"]["count"]["tasks"]) == 1
    assert info["rescale"] is None or "count" not in info["rescale"]["components"], info["rescale"]


def test_off_by_default_and_none_in_info():
    with LocalCluster() as cluster:
        cluster.submit_topology(NAME, {}, build())
        assert cluster.get_topology_info(NAME)["autoscale"] is None
        assert cluster.autoscale(NAME) is None


@pytest.mark.parametrize(("bad", "message"), [
    ({"topology.autoscale.min.parallelism": 8, "topology.autoscale.max.parallelism": 2},
     "topology.autoscale for 'count': max parallelism 2 is below min parallelism 8"),
    ({"topology.autoscale.max.factor": 1}, "topology.autoscale.max.factor must be a number above 1"),
    ({"topology.autoscale.mode": "maybe"}, "topology.autoscale.mode must be 'apply' or 'recommend'"),
])
def test_contradicting_bounds_are_refused_at_submit(bad: dict, message: str):
    topology = build(count_conf={k: v for k, v in bad.items() if "parallelism" in k})
    topo_conf = conf(**{k: v for k, v in bad.items() if "parallelism" not in k})
    with LocalCluster() as cluster, pytest.raises(InvalidTopologyError) as e:
        cluster.submit_topology(NAME, topo_conf, topology)
    assert message in str(e.value) and "\n" not in str(e.value)
