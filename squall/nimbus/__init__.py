"""Nimbus: the daemon that accepts, runs and manages topologies (JStorm's Nimbus).

It is stateless: what it knows lives in the store (``squall.store``), and each running
topology is a Spark application of its own (``squall.spark.app``), started detached with
``spark-submit``, so Nimbus can die and come back, or hand over to a standby, while
topologies run on. See docs/nimbus.md.
"""
