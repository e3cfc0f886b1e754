"""An in-process Nimbus for the security tests of the web surfaces: its real HTTP server on a
real socket, a real SQLite store and blob store; no master is launched (no Spark). Topologies
are put in the store and the blob store as ``submit`` would leave them."""

from __future__ import annotations

import http.client
import json
import threading
import time
from pathlib import Path
from typing import Any

import cloudpickle

from squall import Bolt, Fields, Spout, TopologyBuilder
from squall.nimbus.config import NimbusConfig
from squall.nimbus.launcher import Launcher
from squall.nimbus.server import NimbusServer
from squall.nimbus.upgrades import Nimbus
from squall.store import BlobStore, open_store
from squall.store import keys as K
from tests.nimbus.harness import free_port

TOKEN = "web-security-token-0123456789abcdef"


class Words(Spout):
    def next_tuple(self) -> None:
        pass

    def declare_output_fields(self, d: Any) -> None:
        d.declare(Fields("word"))


class Count(Bolt):
    def execute(self, tup: Any) -> None:
        pass


class InProcNimbus:
    """A leading Nimbus serving on ``host``:a free port (``with`` closes it)."""

    def __init__(self, root: Path, host: str = "127.0.0.1", *, timeout: float = 30.0,
                 max_connections: int | None = None, **config: Any) -> None:
        self.host, self.port = host, free_port()
        self.config = NimbusConfig(host=host, port=self.port, data_dir=root,
                                   store=f"sqlite:{root / 'store.sqlite3'}", **config).resolved()
        assert self.config.blob_dir is not None and self.config.log_dir is not None
        self.store = open_store(self.config.store or "")
        launcher = Launcher(store_uri=self.config.store or "", blob_dir=self.config.blob_dir,
                            log_dir=self.config.log_dir, spark_submit="/bin/false")
        self.election = self.store.election({"url": self.config.url})
        blobs = BlobStore(self.config.blob_dir)
        self.nimbus = Nimbus(self.config, self.store, self.election, launcher, blobs)
        self.election.start()
        deadline = time.monotonic() + 10
        while not self.election.is_leader():
            assert time.monotonic() < deadline, "the Nimbus was not elected"
            time.sleep(0.02)
        cap = {} if max_connections is None else {"max_connections": max_connections}
        self.server = NimbusServer(host, self.port, TOKEN, timeout=timeout, **cap)
        self.server.attach(self.nimbus)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def __enter__(self) -> InProcNimbus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.election.stop()
        self.store.close()

    def add_topology(self, name: str, conf: dict, *, last_error: str | None = None) -> str:
        """A running-looking topology ``name`` with configuration ``conf``; its id."""
        b = TopologyBuilder()
        b.set_spout("words", Words())
        b.set_bolt("count", Count()).shuffle_grouping("words")
        topology_id = f"{name}-1700000000-abcdef"
        self.nimbus.blobs.write(topology_id, 1, code=b"", topology=cloudpickle.dumps(b.create_topology()),
                                conf=conf)
        self.store.put(K.topology_key(name), {
            "name": name, "id": topology_id, "secret": "ab" * 32, "status": K.ACTIVE, "active": True,
            "version": 1, "versions": [1], "workers": None, "num_workers": 1, "parallelism": {},
            "epoch": 1, "upgrade": None, "spark_master": "local[2]", "submitted": time.time(),
            "state": K.RUNNING, "restarts": 0, "last_error": last_error, "message_timeout_secs": 30.0})
        return topology_id

    def get(self, path: str, *, token: str | None = None, host: str | None = None) -> tuple[int, Any]:
        """GET ``path``; (status, JSON body or text)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            if host is not None:
                conn.putrequest("GET", path, skip_host=True)
                conn.putheader("Host", host)
                for k, v in headers.items():
                    conn.putheader(k, v)
                conn.endheaders()
            else:
                conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            raw = resp.read().decode()
            try:
                return resp.status, json.loads(raw)
            except ValueError:
                return resp.status, raw
        finally:
            conn.close()
