"""``squall nimbus``: wire the store, the election, the monitor and the REST server, and run.

Every Nimbus serves reads; only the elected leader changes anything and watches the
topology masters. On SIGTERM or SIGINT it stops serving and gives up leadership; the
topologies run on (their masters are processes of their own).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from types import FrameType

from squall.nimbus.auth import load_or_create_token, private_dir
from squall.nimbus.config import NimbusConfig
from squall.nimbus.launcher import Launcher
from squall.nimbus.monitor import Monitor
from squall.nimbus.notifier import ActionNotifier, load_plugin
from squall.nimbus.observer import Observer
from squall.nimbus.replication import CodeSync, http_fetcher
from squall.nimbus.server import NimbusServer
from squall.nimbus.upgrades import Nimbus
from squall.store import BlobStore, open_store

log = logging.getLogger("squall.nimbus")


def run_nimbus(config: NimbusConfig) -> int:
    """Run Nimbus until a signal stops it; returns the exit status."""
    config = config.resolved()
    if bool(config.tls_cert) != bool(config.tls_key):
        raise OSError("TLS needs both a certificate and its key (--tls-cert and --tls-key)")
    assert config.store and config.token_file and config.blob_dir and config.log_dir and config.url
    for directory in (config.data_dir, config.blob_dir, config.log_dir):
        private_dir(directory)  # tokens, uploaded code, logs: its owner's only, whatever exists
    token = load_or_create_token(config.token_file)
    options = {"session_timeout": config.zk_session_timeout_secs} if config.store.startswith("zk://") else {}
    store = open_store(config.store, auth=config.zk_auth, **options)
    try:
        tls = (str(config.tls_cert), str(config.tls_key)) if config.tls_cert else None
        server = NimbusServer(config.host, config.port, token, timeout=config.http_timeout_secs,
                              max_wait_secs=config.max_wait_secs, tls=tls)
    except OSError as e:
        store.close()
        raise OSError(f"Nimbus cannot listen on {config.host}:{config.port}: {e.strerror or e}") from None
    election = store.election({"url": config.url, "pid": os.getpid(), "host": socket.gethostname(),
                               "since": time.time()})
    launcher = Launcher(store_uri=config.store, blob_dir=config.blob_dir, log_dir=config.log_dir,
                        spark_submit=config.spark_submit, bind_host=config.host, store_auth=config.zk_auth)
    nimbus = Nimbus(config, store, election, launcher, BlobStore(config.blob_dir))
    cafile = str(config.tls_cert) if config.tls_cert else None  # a cluster's shared self-signed cert
    nimbus.sync = CodeSync(store, nimbus.blobs, config.url, http_fetcher(token, cafile),
                           freq_secs=config.code_sync_freq_secs,
                           leader_url=lambda: (election.leader() or {}).get("url"))
    if config.notifier_class:
        try:
            nimbus.notifier = ActionNotifier(load_plugin(config.notifier_class), notifier_conf(config))
        except ValueError:
            server.httpd.server_close()
            store.close()
            raise
    observer = Observer(nimbus, config.history_interval_secs)
    server.attach(nimbus, observer)
    monitor = Monitor(nimbus)
    stopping = threading.Event()

    def stop(signum: int, _frame: FrameType | None) -> None:
        if not stopping.is_set():
            stopping.set()
            log.info("Nimbus stopping (signal %d); topologies keep running", signum)
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    election.start()
    nimbus.sync.start()
    monitor.start()
    observer.start()
    log.info("squall nimbus %s serving (store %s, blobs %s)", config.url, config.store, config.blob_dir)
    print(f"squall nimbus listening on {config.url}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    finally:
        monitor.stop()
        nimbus.sync.stop()
        observer.stop()
        election.stop()
        if nimbus.notifier is not None:
            nimbus.notifier.close()
        store.close()
    return 0


def notifier_conf(config: NimbusConfig) -> dict:
    """What the notifier's ``prepare`` gets: Nimbus's settings by key, and the topology defaults."""
    from squall.nimbus.config import CONF_KEYS

    out = {key: getattr(config, attr) for key, (attr, _) in CONF_KEYS.items()}
    out = {k: str(v) if hasattr(v, "__fspath__") else v for k, v in out.items()}
    return {**config.topology_defaults, **out}
