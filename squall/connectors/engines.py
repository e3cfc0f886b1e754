"""Which engine a Spark connector's task reads and writes with: Spark, or pyarrow.

``spark``: a SparkSession in the task's process, the active one (a ``LocalCluster`` in a
driver program) or one started on ``squall.connectors.spark.master``. ``arrow``: pyarrow,
for tasks that cannot have a session: those of a topology on the Spark runtime run inside
Spark executors, where Spark forbids starting one. ``auto`` (the default) is ``arrow``
inside a Spark task and ``spark`` everywhere else. pyspark is imported only when needed.
"""

from __future__ import annotations

from typing import Any

MASTER_KEY = "squall.connectors.spark.master"
ENGINES = ("auto", "spark", "arrow")


def in_spark_executor() -> bool:
    """True inside a Spark task (an executor's Python worker), where no SparkSession may start."""
    try:
        from pyspark import TaskContext
    except ImportError:
        return False
    return TaskContext.get() is not None


def check_engine(engine: str, who: str) -> None:
    """Refuse an unknown engine name, naming the choices."""
    if engine not in ENGINES:
        raise ValueError(f"{who}: engine={engine!r}; choose one of {', '.join(ENGINES)}")


def resolve_engine(engine: str, who: str) -> str:
    """``spark`` or ``arrow`` for this process: ``auto`` is arrow inside a Spark executor."""
    check_engine(engine, who)
    if engine == "auto":
        return "arrow" if in_spark_executor() else "spark"
    return engine


def session(conf: dict | None = None) -> Any:
    """The process's SparkSession: the active one, else one on ``squall.connectors.spark.master``."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    master = (conf or {}).get(MASTER_KEY, "local[1]")
    return (SparkSession.builder.master(master).appName("squall-connectors")
            .config("spark.ui.enabled", "false").getOrCreate())
