"""Spark's excluded executors are not offered to the scheduler (issue 41, item 10).

With ``spark.excludeOnFailure.enabled`` Spark stops scheduling on an executor whose tasks
failed there too often; squall's offers (``placement.executors``) read the application's
executor list from Spark's status store and must leave such an executor out, or a worker
placed on its host would wait for a slot Spark never gives. Producing an exclusion needs a
multi-executor cluster and repeated task failures; here the status store's executor list is
given as Spark's ``ExecutorSummary`` answers it (id, isActive, isExcluded, hostPort,
totalCores), through the same calls ``executors`` makes on a SparkContext.
"""

from __future__ import annotations

from squall.spark.placement import executors


class Summary:
    """One entry of Spark's ``statusStore().executorList(true)`` (an ``ExecutorSummary``)."""

    def __init__(self, eid: str, host: str, cores: int, excluded: bool = False, active: bool = True):
        self._id, self._host, self._cores, self._excluded, self._active = eid, host, cores, excluded, active

    def id(self):
        return self._id

    def isActive(self):
        return self._active

    def isExcluded(self):
        return self._excluded

    def hostPort(self):
        return f"{self._host}:40000"

    def totalCores(self):
        return self._cores


class JavaList:
    def __init__(self, items):
        self.items = list(items)

    def iterator(self):
        items = iter(self.items)
        sentinel = object()

        class It:
            def __init__(self):
                self.next_item = next(items, sentinel)

            def hasNext(self):
                return self.next_item is not sentinel

            def next(self):
                item, self.next_item = self.next_item, next(items, sentinel)
                return item
        return It()


class Context:
    """What ``executors`` reads of a SparkContext on a cluster master."""

    master = "spark://127.0.0.1:7077"

    def __init__(self, summaries):
        store = type("Store", (), {"executorList": lambda _self, _active: JavaList(summaries)})()
        scala = type("Scala", (), {"statusStore": lambda _self: store})()
        self._jsc = type("Jsc", (), {"sc": lambda _self: scala})()


def test_an_excluded_executor_is_not_offered():
    summaries = [Summary("driver", "10.0.0.1", 0), Summary("1", "10.0.0.2", 2),
                 Summary("2", "10.0.0.3", 2, excluded=True), Summary("3", "10.0.0.4", 2, active=False),
                 Summary("4", "10.0.0.3", 1)]
    assert executors(Context(summaries), 0, 0.0) == [("10.0.0.2", 2), ("10.0.0.3", 1)]


def test_a_spark_without_isexcluded_offers_every_active_executor():
    class Old(Summary):
        isExcluded = None  # Spark before 3.1 has isBlacklisted

        def isBlacklisted(self):
            return self._excluded

    summaries = [Old("1", "10.0.0.2", 2), Old("2", "10.0.0.3", 2, excluded=True)]
    assert executors(Context(summaries), 0, 0.0) == [("10.0.0.2", 2)]
