"""A multilang subprocess that dies, is killed, or hangs: detected, reported with its stderr
tail, killed and restarted, its in-flight tuples failed and replayed (nothing lost)."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter

from squall import Config, Fields, LocalCluster, TopologyBuilder
from squall.multilang import ShellBolt
from squall.runtime import clock
from tests.integration.components import RECORD, CountBolt, ListSpout
from tests.multilang.helpers import PYTHON, RESOURCES, wait_for


def build(items, marker, parallelism=1, **env):
    split = ShellBolt([PYTHON, "pystorm_split.py"], resources=RESOURCES,
                      outputs={"default": Fields("word")},
                      env={"SPLIT_MARKER": str(marker), **env})
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(items), 1)
    b.set_bolt("split", split, parallelism).shuffle_grouping("spout")
    b.set_bolt("count", CountBolt(), 1).shuffle_grouping("split")
    return b.create_topology()


def acked():
    return sorted(m for _, m in RECORD["spout.acked"])


def failed():
    return sorted(m for _, m, _ in RECORD["spout.failed"])


def died(cluster, name="ml"):
    return [e for e in cluster.get_topology_info(name)["errors"]
            if "SubprocessDiedError" in e["message"]]


def test_a_subprocess_that_exits_is_reported_restarted_and_its_tuples_replayed(tmp_path):
    items = [[f"words of sentence {i}"] for i in range(20)]
    items[7] = ["die here please"]
    with LocalCluster() as cluster:
        cluster.submit_topology("ml", Config(), build(items, tmp_path / "m"))
        assert wait_for(lambda: acked() == list(range(20)))
        errors = died(cluster)
    assert 7 in failed()  # what it held when it died was failed, then replayed
    assert len(errors) == 1
    message = errors[0]["message"]
    assert "exit code 3" in message
    assert "dying on purpose at 'die here please'" in message  # the stderr tail
    assert "pystorm_split.py" in message
    seen = Counter(w for _, w in RECORD["count.seen"])
    for i in range(20):
        if i != 7:
            assert seen[str(i)] >= 1  # nothing lost


def test_sigkill_of_the_subprocess_loses_nothing(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    items = [[f"sentence number {i}"] for i in range(200)]
    split = ShellBolt([PYTHON, "-c", _PID_WRAPPER, str(pids)], resources=RESOURCES,
                      outputs={"default": Fields("word")}, env={"SPLIT_DELAY": "0.005"})
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(items), 1)
    b.set_bolt("split", split, 1).shuffle_grouping("spout")
    b.set_bolt("count", CountBolt(), 1).shuffle_grouping("split")
    conf = Config()
    conf.set_max_spout_pending(20)
    with LocalCluster() as cluster:
        cluster.submit_topology("ml", conf, b.create_topology())
        assert wait_for(lambda: len(RECORD["spout.acked"]) >= 30)
        (first,) = os.listdir(pids)
        os.kill(int(first), signal.SIGKILL)  # the subprocess this test started
        assert wait_for(lambda: acked() == list(range(200)), timeout=30)
        assert len(os.listdir(pids)) == 2  # a second subprocess took over
        errors = died(cluster)
    assert len(errors) == 1 and "killed by SIGKILL" in errors[0]["message"]
    seen = Counter(w for _, w in RECORD["count.seen"])
    assert all(seen[str(i)] >= 1 for i in range(200))


# runs pystorm_split.py after noting its pid in the directory given as argument
_PID_WRAPPER = (
    "import os, runpy, sys; d = sys.argv[1]; open(os.path.join(d, str(os.getpid())), 'w').close(); "
    "sys.argv = ['pystorm_split.py']; runpy.run_path('pystorm_split.py', run_name='__main__')"
)


def test_a_hung_subprocess_is_restarted_after_the_timeout_on_simulated_time(tmp_path):
    items = [["hang on a moment"], ["then carry on"]]
    conf = Config()
    conf["topology.subprocess.timeout.secs"] = 30
    with clock.simulation() as sim, LocalCluster() as cluster:
        # two tasks: the second sentence goes to the one that does not hang
        cluster.submit_topology("ml", conf, build(items, tmp_path / "m", parallelism=2))
        assert wait_for(lambda: acked() == [1])
        assert os.path.exists(f"{tmp_path / 'm'}.hang")
        for _ in range(29):  # 29 s without an answer: still its time
            sim.advance(1)
            time.sleep(0.02)
        time.sleep(0.2)
        assert died(cluster) == [] and failed() == []
        time.sleep(1)  # the subprocess had real time to answer, too
        for _ in range(3):  # past 30 s: killed, its tuple failed
            sim.advance(1)
            time.sleep(0.05)
        assert wait_for(lambda: failed() == [0])
        assert wait_for(lambda: acked() == [0, 1])  # replayed into the new subprocess
        errors = died(cluster)
    assert len(errors) == 1
    assert "answered no heartbeat" in errors[0]["message"]
    assert "hanging on purpose" in errors[0]["message"]


def test_a_healthy_subprocess_survives_a_jump_of_simulated_time(tmp_path):
    items = [["one two"], ["three four"]]
    with clock.simulation() as sim, LocalCluster() as cluster:
        cluster.submit_topology("ml", Config(), build(items, tmp_path / "m"))
        assert wait_for(lambda: acked() == [0, 1])
        for _ in range(3):
            sim.advance(1)
            time.sleep(0.1)
        sim.advance(300)  # heartbeats were answered: a jump is not silence
        time.sleep(0.3)
        sim.advance(1)
        time.sleep(0.3)
        assert died(cluster) == []


def test_one_jump_of_simulated_time_past_the_timeout_restarts_a_hung_subprocess(tmp_path):
    items = [["hang on a moment"], ["then carry on"]]
    conf = Config()
    conf["topology.subprocess.timeout.secs"] = 30
    with clock.simulation() as sim, LocalCluster() as cluster:
        cluster.submit_topology("ml", conf, build(items, tmp_path / "m", parallelism=2))
        assert wait_for(lambda: acked() == [1])
        sim.advance(1)  # the heartbeat the hung subprocess will never answer
        time.sleep(0.2)
        sim.advance(30)  # exactly the timeout: not yet (Storm's test is "more than")
        time.sleep(1)  # the subprocess had real time to answer, too
        assert died(cluster) == []
        sim.advance(1)
        assert wait_for(lambda: acked() == [0, 1])
        assert len(died(cluster)) == 1


def test_hung_subprocess_with_the_testing_kit(tmp_path):
    from squall.testing import simulated_time

    items = [["hang on a moment"], ["then carry on"]]
    conf = Config()
    conf["topology.subprocess.timeout.secs"] = 20
    conf.set_message_timeout_secs(300)  # only the subprocess timeout may act here
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("ml", conf, build(items, tmp_path / "m", parallelism=2))
        assert wait_for(lambda: acked() == [1])
        cluster.advance_time(21)  # the heartbeat sent at 1 s is unanswered at 21 s: not yet
        assert died(cluster) == [] and failed() == []
        time.sleep(1)  # it answers in real time: a question counts after a real second too
        cluster.advance_time(1)
        assert wait_for(lambda: failed() == [0] and acked() == [0, 1])
        assert len(died(cluster)) == 1


def test_healthy_subprocesses_survive_fast_simulated_steps(tmp_path):
    # advance_time steps faster than a subprocess answers: answers come late, not never
    from squall.testing import simulated_time

    conf = Config()
    conf["topology.subprocess.timeout.secs"] = 5
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("ml", conf, build([["one two"], ["three four"]], tmp_path / "m", 2))
        assert wait_for(lambda: acked() == [0, 1])
        cluster.advance_time(60)
        time.sleep(0.5)
        cluster.advance_time(5)
        assert died(cluster) == []
