"""Security second pass, findings 1, 5 and 10: secrets hidden by their value, not only their key.

The topology page's configuration hid a value only when its key named a secret, so
``topology.state.key`` (which lets a Redis writer forge pickles the workers load), a
password inside the Storm-form JSON string ``topology.state.provider.config``, a JAAS line,
a PEM key and a URL's password reached anyone who could GET the page; the cluster pages
named the store and Nimbus's paths; a worker's last error and a gauge's error texts were
shown; the multilang handshake handed the state key and nested passwords to the subprocess.
An in-process Nimbus (real HTTP server, real SQLite store and blob store).
"""

from __future__ import annotations

import json

from squall.api.redaction import redact
from squall.multilang.setup import setup_conf
from squall.nimbus.redact import public
from squall.nimbus.stormapi import TopologyView, component_page, topology_page
from tests.security.inproc import TOKEN, InProcNimbus

STATE_KEY = "5e" * 32
REDIS_PW = "xyz-redis-pw"
JAAS_PW = "kafka-jaas-pw"
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
URL_PW = "url-pw-123"
NESTED_PW = "nested-pw-456"
SECRETS = (STATE_KEY, REDIS_PW, JAAS_PW, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", URL_PW, NESTED_PW)
CONF = {
    "topology.workers": 1,
    "topology.state.key": STATE_KEY,
    "topology.state.provider": "squall.state.redis.RedisStateProvider",
    # Storm's storm.yaml form (docs/state.md): a JSON string
    "topology.state.provider.config": json.dumps({"host": "127.0.0.1", "port": 6379, "password": REDIS_PW}),
    "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                        f'username="u" password="{JAAS_PW}";',
    "consumer.login": f'PlainLoginModule required username="u" password="{JAAS_PW}2";',  # by value
    "ssl.key.pem": PEM,
    "broker.cert.chain": PEM,  # by value: a PEM block under a key naming no secret
    "my.cache.url": f"redis://:{URL_PW}@cache.internal:6379/0",
    "my.provider": {"host": "h", "credentials": {"user": "u", "pass": NESTED_PW}},
    "squall.conf.cluster.file": "/etc/squall/cluster-secret-path.yaml",
}


def leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def test_topology_page_hides_secrets_by_value_to_every_token_free_read(tmp_path):
    with InProcNimbus(tmp_path) as n:
        tid = n.add_topology("wc", CONF)
        for path in ("/api/v1/topology/wc", "/api/v1/topology/wc?window=600", f"/api/v1/topology/{tid}",
                     "/api/v1/topology/wc/component/count", "/api/v1/topology/wc/metrics",
                     "/api/v1/topology/summary", "/api/v1/topologies/wc", "/api/v1/topology-workers/wc",
                     "/metrics"):
            status, body = n.get(path)
            text = body if isinstance(body, str) else json.dumps(body)
            assert status == 200, (path, status, text[:300])
            assert not leaks(text), (path, leaks(text))
        _, page = n.get("/api/v1/topology/wc")
        conf = page["configuration"]
        assert conf["topology.workers"] == 1 and conf["topology.state.key"] == "*****"
        assert json.loads(conf["topology.state.provider.config"])["port"] == 6379  # the rest stays
        assert "/etc/squall" not in json.dumps(conf)
        # the web UI's Configuration table shows this object; the token's holder sees the same
        # (the full configuration is GET /topologies/{name}/conf, which needs the token)
        _, held = n.get("/api/v1/topology/wc", token=TOKEN)
        assert not leaks(json.dumps(held["configuration"]))
        status, full = n.get("/api/v1/topologies/wc/conf", token=TOKEN)
        assert status == 200 and STATE_KEY in json.dumps(full)


def test_redact_hides_each_value_form():
    hidden = redact(CONF)
    assert not leaks(json.dumps(hidden)), leaks(json.dumps(hidden))
    assert hidden["my.cache.url"] == "redis://:*****@cache.internal:6379/0"
    assert hidden["consumer.login"] == 'PlainLoginModule required username="u" password="*****";'
    assert hidden["broker.cert.chain"] == "*****" and hidden["my.provider"]["host"] == "h"


def test_multilang_handshake_leaves_out_the_state_key_and_nested_passwords():
    conf = {**CONF, "topology.state.provider.config": {"host": "h", "password": NESTED_PW}}
    sent = setup_conf(conf, "wc")
    text = json.dumps(sent)
    assert not leaks(text), leaks(text)
    assert "topology.state.key" not in sent
    assert sent["topology.workers"] == 1 and sent["topology.name"] == "wc"
    assert sent["topology.state.provider.config"]["host"] == "h"


def test_cluster_pages_show_no_store_or_paths_without_the_token(tmp_path):
    with InProcNimbus(tmp_path) as n:
        n.add_topology("wc", {"topology.workers": 1})
        home = str(tmp_path)
        for path in ("/api/v1/cluster/configuration", "/api/v1/cluster/summary", "/api/v1/nimbus/summary",
                     "/api/v1/supervisor/summary", "/api/v1/cluster", "/api/v1/health"):
            status, body = n.get(path)
            assert status == 200, (path, body)
            assert home not in json.dumps(body), (path, body)
        status, body = n.get("/api/v1/cluster/configuration", token=TOKEN)
        assert status == 200 and body["nimbus.store"].startswith("sqlite:")


def test_worker_error_and_gauge_errors_are_hidden_without_the_token():
    card = "4111-1111-1111-1111"
    info = {"name": "wc", "id": "wc-1-abcdef", "status": "ACTIVE", "uptime_secs": 5.0, "num_workers": 1,
            "workers": [{"worker": 0, "host": "h", "tasks": [1], "state": "RUNNING",
                         "last_error": f"ValueError: bad {card}"}],
            "components": {"count": {"tasks": [1], "emitted": 0, "executed": 0, "acked": 0, "failed": 0,
                                     "errors": 1, "metrics": {"g": {"type": "gauge", "values": {"1": 2},
                                                                    "errors": {"1": f"KeyError: {card}"}}}}},
            "errors": [], "master": {"state": "RUNNING"}}
    shape = {"count": {"kind": "bolt", "class": "C", "parallelism": 1, "tasks": 1, "streams": {},
                       "inputs": [], "memory_load_mb": 0, "cpu_load_percent": 0, "stateful": False}}
    view = TopologyView(info, shape, {}, None, 10.0)
    assert card not in json.dumps(public(topology_page(view, ":all-time")))
    assert card not in json.dumps(public(component_page(view, "count", ":all-time")))
    assert card in json.dumps(topology_page(view, ":all-time"))  # the token's holder sees it


def test_error_reports_hide_the_secrets_their_message_and_traceback_echo(caplog):
    """A connection error that echoes its URL or a JAAS line keeps its cause, not the password."""
    from squall.runtime.errors import ErrorLog

    def connect(url: str, jaas: str) -> None:
        raise ConnectionError(f"cannot reach {url}: sasl.jaas.config={jaas}")

    log = ErrorLog()
    try:
        connect("redis://:redis-pw-55@10.0.0.9:6379/0", 'PlainLoginModule required password="jaas-pw-77";')
    except ConnectionError as e:
        with caplog.at_level("ERROR"):
            entry = log.report("sink", 3, e)
    shown = entry["message"] + entry["traceback"] + caplog.text
    assert "redis-pw-55" not in shown and "jaas-pw-77" not in shown, shown
    assert "cannot reach redis://:*****@10.0.0.9:6379/0" in entry["message"]
