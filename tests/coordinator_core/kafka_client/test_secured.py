"""Secured clusters on every path: TLS for real (stunnel in front of Tansu, a throwaway CA), SASL as
far as Tansu goes, and no secret in any output, log line, journal or exception.

Tansu has no SASL users in memory mode: a SaslHandshake is answered UNSUPPORTED_SASL_MECHANISM, which
shows the client attempted SASL (a plaintext client would have sent Metadata instead). What only a real
Apache Kafka can show is listed in docs/test-broker.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from offsetops.coordinator_core.kafka_client import ClientConfigError, ClusterUnreachable, KafkaClientConfig
from offsetops.coordinator_core.loader import load_partition_dir
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.sources.logdir import open_log_dir
from offsetops.coordinator_core.tombstones.produce import read_partitions

from offsetops.cli import main
from tests.coordinator_core.cleaner_audit.scenarios import T0, healthy_partition
from tests.coordinator_core.expiration.test_rules import NOW, RET, P, build_scenario
from tests.support.broker import BrokerClient, authenticating_tansu, free_port
from tests.support.shared import REAL_KAFKA_DIR
from tests.support.tls import TLSBroker, make_test_ca

pytestmark = pytest.mark.broker
REPO = Path(__file__).resolve().parents[3]
SASL_CANARY = "sasl-pw-canary-3f9a"
TIMEOUT_MS = 2000
BOUND_S = 2 * TIMEOUT_MS / 1000 + 2


def _properties(path: Path, tb: TLSBroker, *extra: str, bootstrap: bool = True) -> Path:
    lines = [f"bootstrap.servers={tb.bootstrap}"] if bootstrap else []
    lines += [
        "security.protocol=SSL",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={tb.ca.ca_cert}",
        f"socket.connection.setup.timeout.ms={TIMEOUT_MS}",
        *extra,
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _ssl(tb: TLSBroker) -> KafkaClientConfig:
    return KafkaClientConfig(tb.bootstrap, security_protocol="SSL", ssl_cafile=str(tb.ca.ca_cert))


def test_reload_over_tls_from_the_client_config_alone(kafka_tls_broker: TLSBroker, tmp_path, capsys) -> None:
    root = REAL_KAFKA_DIR / "DanielMorales9__kafkafun"
    if not root.is_dir():
        pytest.skip(f"{root} not present")
    pdir = open_log_dir(root, partitions=[39]).partitions[0]
    tb, topic = kafka_tls_broker, f"tls-replay-{uuid.uuid4().hex[:8]}"
    config = _ssl(tb)
    from kafka.net.compat import KafkaNetClient

    tls = {
        k: v
        for k, v in config.client_kwargs(KafkaNetClient).items()
        if k not in ("bootstrap_servers", "client_id", "request_timeout_ms")
    }
    with BrokerClient(tb.bootstrap, **tls) as bc:
        bc.create_topic(topic)
        for seg in pdir.segments:
            for batch in iter_segment_batches(seg.path, errors=[]):
                bc.produce_raw(topic, 0, batch.raw())
    # No --bootstrap: the file's bootstrap.servers is the cluster.
    code = main(
        [
            "reload",
            "--client-config",
            str(_properties(tmp_path / "c.properties", tb)),
            "--topic",
            topic,
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    [part] = json.loads(out)["partitions"]
    expected = sorted(load_partition_dir(pdir).groups)
    assert [g["group_id"] for g in part["groups"]] == expected

    # `groups` reads the same cluster and lists the data partitions' offsets over the same TLS.
    code = main(
        ["groups", "--client-config", str(tmp_path / "c.properties"), "--topic-name", topic, "--json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert all(gid in out for gid in expected)

    # The Dagster resources, from the same file: the live reload and the admin executor.
    from offsetops.assets.expiration import TombstoneExecutionConfig, _executor
    from offsetops.assets.resources import OffsetsSourceResource, StateResource

    source = OffsetsSourceResource(client_config=str(tmp_path / "c.properties"), topic=topic)
    [cache] = source.load_caches([0])
    assert sorted(cache.groups) == expected
    executor = _executor(
        TombstoneExecutionConfig(mode="admin", confirm=True),
        source,
        StateResource(output_dir="unused"),
        "kip848",
    )
    assert executor.config.uses_ssl and executor.target() == {"bootstrap": tb.bootstrap}
    executor.check()  # TLS verified with the file's CA


def test_audit_over_tls(kafka_tls_broker: TLSBroker, tmp_path, capsys) -> None:
    healthy_partition(tmp_path / "logs", 0)
    props = _properties(tmp_path / "c.properties", kafka_tls_broker)
    argv = ["audit", str(tmp_path / "logs"), "--now", str(T0), "--client-config", str(props), "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["live"]["bootstrap"] == kafka_tls_broker.bootstrap
    # Tansu answers DescribeConfigs over the TLS connection, with no entries.
    assert any("no config entries for topic" in n for n in doc["notes"])


def test_produce_executor_over_tls(kafka_tls_broker: TLSBroker, tmp_path, capsys) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    tb, topic = kafka_tls_broker, f"tls-mirror-{uuid.uuid4().hex[:8]}"
    config = _ssl(tb)
    admin = KafkaAdminClient(**config.client_kwargs(KafkaAdminClient))
    admin.create_topics([NewTopic(topic, P + 1, 1)])
    admin.close()
    src = build_scenario(tmp_path / "src")
    argv = [
        "expire",
        str(src),
        "--now",
        str(NOW),
        "--retention-ms",
        str(RET),
        "--coordinator",
        "legacy",
        "--execute",
        "--executor",
        "produce",
        "--client-config",
        str(_properties(tmp_path / "c.properties", tb)),
        "--target-topic",
        topic,
        "--journal-dir",
        str(tmp_path / "j"),
        "--json",
    ]
    assert main(argv) == 0, capsys.readouterr().err
    doc = json.loads(capsys.readouterr().out)
    assert doc["execution"]["complete"] and doc["execution"]["verification"]["not_gone"] == []
    records = read_partitions(config, topic, None)
    assert [r[2].hex() for r in records] == [t["key_hex"] for t in doc["tombstones"]]
    assert all(r[3] is None for r in records)


def test_wrong_ca_fails_cleanly_within_the_timeout(kafka_tls_broker: TLSBroker, tmp_path, capsys) -> None:
    other = make_test_ca(tmp_path / "other-ca")
    props = _properties(tmp_path / "c.properties", kafka_tls_broker)
    props.write_text(props.read_text().replace(str(kafka_tls_broker.ca.ca_cert), str(other.ca_cert)))
    for argv in (
        ["reload", "--client-config", str(props)],
        ["audit", str(healthy_partition(tmp_path / "logs", 0).parent), "--client-config", str(props)],
    ):
        started = time.monotonic()
        assert main(argv) == 2
        assert time.monotonic() - started < BOUND_S
        err = capsys.readouterr().err
        assert "TLS certificate verification failed" in err and "Traceback" not in err
    # Plaintext to the TLS listener: the server drops the connection, reported as such.
    assert main(["reload", "--bootstrap", kafka_tls_broker.bootstrap]) == 2
    assert "closed the connection at ApiVersions" in capsys.readouterr().err


@pytest.mark.parametrize("protocol", ["SASL_SSL", "SASL_PLAINTEXT"])
def test_sasl_is_attempted_on_every_path(protocol, kafka_tls_broker, kafka_broker, tmp_path, capsys) -> None:
    bootstrap = kafka_tls_broker.bootstrap if protocol == "SASL_SSL" else kafka_broker.bootstrap
    props = tmp_path / "sasl.properties"
    props.write_text(
        f"bootstrap.servers={bootstrap}\nsecurity.protocol={protocol}\nsasl.mechanism=SCRAM-SHA-512\n"
        f"ssl.truststore.type=PEM\nssl.truststore.location={kafka_tls_broker.ca.ca_cert}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="ops" password="{SASL_CANARY}";\n'
    )
    logs = healthy_partition(tmp_path / "logs", 0).parent
    src = build_scenario(tmp_path / "src")
    runs = {
        "reload": ["reload", "--client-config", str(props)],
        "audit": ["audit", str(logs), "--client-config", str(props)],
        "admin": [
            "expire",
            str(src),
            "--now",
            str(NOW),
            "--execute",
            "--executor",
            "admin",
            "--client-config",
            str(props),
            "--journal-dir",
            str(tmp_path / "j"),
        ],
        "produce": [
            "expire",
            str(src),
            "--now",
            str(NOW),
            "--execute",
            "--executor",
            "produce",
            "--client-config",
            str(props),
            "--target-topic",
            "t",
            "--journal-dir",
            str(tmp_path / "k"),
        ],
    }
    for name, argv in runs.items():
        assert main(argv) == 2, name
        out, err = capsys.readouterr()
        assert "UNSUPPORTED_SASL_MECHANISM for mechanism SCRAM-SHA-512" in err, (name, err)
        assert f"({protocol})" in err and SASL_CANARY not in out + err


@pytest.mark.slow
def test_no_secret_reaches_output_logs_journals_or_exceptions(kafka_tls_broker, tmp_path) -> None:
    """Secret canaries in the SASL password and the TLS key password, every path, with --verbose."""
    tb = kafka_tls_broker
    key_canary = tb.ca.client_key_password
    tls = _properties(
        tmp_path / "mtls.properties",
        tb,
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={tb.ca.client_cert}",
        f"ssl.key.password={key_canary}",
    )
    # librdkafka's names for the key file, to check both spellings are understood.
    tls.write_text(
        tls.read_text().replace(
            f"ssl.keystore.location={tb.ca.client_cert}",
            f"ssl.certificate.location={tb.ca.client_cert}\nssl.key.location={tb.ca.client_key}",
        )
    )
    wrong_key = tmp_path / "wrong.properties"
    wrong_key.write_text(tls.read_text().replace(key_canary, "wrong-" + SASL_CANARY))
    sasl = tmp_path / "sasl.properties"
    sasl.write_text(
        tls.read_text().replace("security.protocol=SSL", "security.protocol=SASL_SSL")
        + f"sasl.mechanism=PLAIN\nsasl.username=ops\nsasl.password={SASL_CANARY}\n"
    )
    logs = healthy_partition(tmp_path / "logs", 0).parent
    src = build_scenario(tmp_path / "src")
    seen = []
    for props, expect in ((tls, 0), (wrong_key, 2), (sasl, 2)):
        # a password in the environment beside an SSL-only config is itself refused; the SASL run has one
        env = {**os.environ, **({"OFFSETOPS_SASL_PASSWORD": SASL_CANARY} if props is sasl else {})}
        for argv in (
            ["reload", "--client-config", str(props), "--topic", "absent-topic"],
            ["audit", str(logs), "--client-config", str(props)],
            [
                "expire",
                str(src),
                "--now",
                str(NOW),
                "--execute",
                "--executor",
                "admin",
                "--client-config",
                str(props),
                "--journal-dir",
                str(tmp_path / "j"),
            ],
        ):
            run = subprocess.run(
                [sys.executable, "-m", "offsetops.cli", "--verbose", *argv],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            seen.append(run.stdout + run.stderr)
            assert "Traceback" not in run.stderr, run.stderr
            if props is wrong_key:
                assert run.returncode == expect and "cannot load the client certificate" in run.stderr
    text = "\n".join(seen)
    assert "kafka" in text.lower()  # --verbose did let kafka-python's log lines through
    assert "does not exist" in text  # the TLS runs connected (with the encrypted client key)
    journals = "".join(p.read_text() for p in (tmp_path / "j").glob("*")) if (tmp_path / "j").exists() else ""
    for secret in (SASL_CANARY, key_canary, "wrong-" + SASL_CANARY):
        assert secret not in text and secret not in journals
    with pytest.raises(ClientConfigError) as info:
        KafkaClientConfig.from_file(wrong_key).ssl_context()
    assert SASL_CANARY not in str(info.value) and SASL_CANARY not in repr(info.value)


@pytest.mark.slow
def test_rejected_scram_login_is_bounded_and_masked(tmp_path) -> None:
    """kafka-python runs the SCRAM exchange itself (the mechanism handshake passes on an authenticating
    Tansu); its failure stays bounded and its --verbose log lines carry no password."""
    with authenticating_tansu() as port:
        env = {
            **os.environ,
            "OFFSETOPS_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "OFFSETOPS_SASL_MECHANISM": "SCRAM-SHA-256",
            "OFFSETOPS_SASL_USERNAME": "mallory",
            "OFFSETOPS_SASL_PASSWORD": SASL_CANARY,
            "OFFSETOPS_CONNECT_TIMEOUT_MS": str(TIMEOUT_MS),
        }
        started = time.monotonic()
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "offsetops.cli",
                "--verbose",
                "reload",
                "--bootstrap",
                f"127.0.0.1:{port}",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert time.monotonic() - started < BOUND_S + 3  # + interpreter start-up
    assert run.returncode == 2
    assert "ERROR kafka" in run.stderr  # kafka-python's own lines, shown because of --verbose
    assert f"cannot reach Kafka at 127.0.0.1:{port} (SASL_PLAINTEXT)" in run.stderr
    assert SASL_CANARY not in run.stdout + run.stderr


def test_unreachable_error_never_carries_the_password() -> None:
    config = KafkaClientConfig(
        f"127.0.0.1:{free_port()}",
        security_protocol="SASL_PLAINTEXT",
        sasl_plain_username="ops",
        sasl_plain_password=SASL_CANARY,
        connect_timeout_ms=500,
    )
    from offsetops.coordinator_core.kafka_client import check_connection

    with pytest.raises(ClusterUnreachable) as info:
        check_connection(config)
    assert SASL_CANARY not in str(info.value) and "connection refused" in str(info.value).lower()
