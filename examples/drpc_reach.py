"""storm-starter's ReachTopology: how many distinct people a URL reached on Twitter.

    reach(url) = | union of the followers of everyone who tweeted url |

    prepare-request -> GetTweeters -> GetFollowers -> PartialUniquer -> CountAggregator

``python -m examples.drpc_reach`` runs it on a LocalCluster with a LocalDRPC and prints
the reach of each URL. With ``--server HOST:PORT`` it serves a running ``squall drpc``
instead (token from ``--drpc-token-file``, default ``$SQUALL_HOME/drpc.token``) for
``--seconds`` seconds, so that ``squall drpc-call reach foo.com/blog/1`` answers.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from squall import BasicBolt, Config, Fields, LocalCluster
from squall.drpc import BatchBolt, LinearDRPCTopologyBuilder, LocalDRPC

TWEETERS_DB = {
    "foo.com/blog/1": ["sally", "bob", "tim", "george", "nathan"],
    "engineering.twitter.com/blog/5": ["adam", "david", "sally", "nathan"],
    "tech.backtype.com/blog/123": ["tim", "mike", "john"],
}
FOLLOWERS_DB = {
    "sally": ["bob", "tim", "alice", "adam", "jim", "chris", "jai"],
    "bob": ["sally", "nathan", "jim", "mary", "david", "vivian"],
    "tim": ["alex"],
    "nathan": ["sally", "bob", "adam", "harry", "chris", "vivian", "emily", "jordan"],
    "adam": ["david", "carissa"],
    "mike": ["john", "bob"],
    "john": ["alice", "nathan", "jim", "mike", "bob"],
}


class GetTweeters(BasicBolt):
    """[id, url] -> [id, tweeter] for everyone who tweeted the URL."""

    def execute(self, tup: Any, collector: Any) -> None:
        for tweeter in TWEETERS_DB.get(tup[1], []):
            collector.emit([tup[0], tweeter])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("id", "tweeter"))


class GetFollowers(BasicBolt):
    """[id, tweeter] -> [id, follower] for each of the tweeter's followers."""

    def execute(self, tup: Any, collector: Any) -> None:
        for follower in FOLLOWERS_DB.get(tup[1], []):
            collector.emit([tup[0], follower])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("id", "follower"))


class PartialUniquer(BatchBolt):
    """Distinct followers seen by this task for one request."""

    def prepare(self, conf: dict, context: Any, collector: Any, id: Any) -> None:  # noqa: A002
        self.collector, self.id, self.followers = collector, id, set()

    def execute(self, tup: Any) -> None:
        self.followers.add(tup[1])

    def finish_batch(self) -> None:
        self.collector.emit([self.id, len(self.followers)])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("id", "partial-count"))


class CountAggregator(BatchBolt):
    """Sums the partial counts of one request: its reach."""

    def prepare(self, conf: dict, context: Any, collector: Any, id: Any) -> None:  # noqa: A002
        self.collector, self.id, self.count = collector, id, 0

    def execute(self, tup: Any) -> None:
        self.count += tup[1]

    def finish_batch(self) -> None:
        self.collector.emit([self.id, self.count])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("id", "reach"))


def builder() -> LinearDRPCTopologyBuilder:
    """The reach topology's builder (storm-starter's parallelism)."""
    b = LinearDRPCTopologyBuilder("reach")
    b.add_bolt(GetTweeters(), 4)
    b.add_bolt(GetFollowers(), 12).shuffle_grouping()
    b.add_bolt(PartialUniquer(), 6).fields_grouping(Fields("id", "follower"))
    b.add_bolt(CountAggregator(), 3).fields_grouping(Fields("id"))
    return b


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", metavar="HOST:PORT", help="serve this squall drpc server")
    parser.add_argument("--drpc-token-file", metavar="PATH")
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    conf = Config()
    conf.set_num_workers(2)
    if args.server is None:
        with LocalDRPC() as drpc, LocalCluster() as cluster:
            cluster.submit_topology("reach", conf, builder().create_local_topology(drpc))
            for url in [*TWEETERS_DB, "notaurl.com"]:
                print(f"reach of {url}: {drpc.execute('reach', url)}")
        return 0
    host, _, port = args.server.rpartition(":")
    home = Path(os.environ.get("SQUALL_HOME") or Path.home() / ".squall")
    conf.update({"drpc.servers": [host], "drpc.port": int(port),
                 "squall.drpc.token.file": args.drpc_token_file or str(home / "drpc.token")})
    with LocalCluster() as cluster:
        cluster.submit_topology("reach", conf, builder().create_remote_topology())
        print(f"serving 'reach' from {args.server} for {args.seconds:g} s", flush=True)
        time.sleep(args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
