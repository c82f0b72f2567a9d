"""The one Kafka client configuration: client.properties (Java rules), OFFSETOPS_* and masking."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.net.compat import KafkaNetClient
from offsetops.coordinator_core.cleaner.config import read_broker_id
from offsetops.coordinator_core.kafka_client import (
    ClientConfigError,
    KafkaClientConfig,
    parse_properties,
)

CANARY = "sasl-canary-5e1d"


def test_properties_follow_java_rules() -> None:
    text = (
        "# comment\n! also a comment\n"
        "a=1\nb : 2\nc 3\n"
        "d=x \\\n   y\n"  # continuation: leading blanks of the next line are dropped
        "e=caf\\u00e9\n"  # \uXXXX escape
        "key\\ with\\ spaces=v\n"
        "tab=a\\tb\n"
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "x y",
        "e": "café",
        "key with spaces": "v",
        "tab": "a\tb",
    }


def test_client_properties_file(tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text(
        "bootstrap.servers=broker-1:9096, broker-2:9096\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="offsetops" \\\n'
        # Properties turn \\\" into \", then JAAS unescapes it to ": the password is pa"ss.
        '    password="pa\\\\\\"ss";\n'
        "ssl.truststore.type=PEM\n"
        "ssl.truststore.location=/etc/kafka/ca.pem\n"
        "ssl.keystore.type=PEM\n"
        "ssl.keystore.location=/etc/kafka/client.pem\n"
        "ssl.key.password=k3y\\u0021\n"
        "ssl.endpoint.identification.algorithm=\n"
        "socket.connection.setup.timeout.ms=2500\n"
        "max.poll.records=500\n"
    )
    config = KafkaClientConfig.from_file(props)
    assert config.servers == ["broker-1:9096", "broker-2:9096"]
    assert (config.security_protocol, config.sasl_mechanism) == ("SASL_SSL", "SCRAM-SHA-256")
    assert (config.sasl_plain_username, config.sasl_plain_password) == ("offsetops", 'pa"ss')
    assert (config.ssl_cafile, config.ssl_certfile, config.ssl_password) == (
        "/etc/kafka/ca.pem",
        "/etc/kafka/client.pem",
        "k3y!",
    )
    assert config.ssl_check_hostname is False
    assert config.connect_timeout_ms == 2500


def test_environment_fills_what_the_file_leaves_out(tmp_path: Path) -> None:
    props = tmp_path / "c.properties"
    props.write_text("bootstrap.servers=k1:9092\nsecurity.protocol=SASL_PLAINTEXT\nsasl.username=ops\n")
    env = {
        "OFFSETOPS_SASL_PASSWORD": CANARY,
        "OFFSETOPS_BOOTSTRAP_SERVERS": "ignored:1",
        "OFFSETOPS_CONNECT_TIMEOUT_MS": "1500",
    }
    config = KafkaClientConfig.resolve(None, props, env)
    assert config.bootstrap_servers == "k1:9092"  # the file beats the environment
    assert config.sasl_plain_password == CANARY and config.connect_timeout_ms == 1500
    assert config.sasl_mechanism == "PLAIN"  # Kafka's default sasl.mechanism
    # --bootstrap beats both.
    assert KafkaClientConfig.resolve("k9:9092", props, env).bootstrap_servers == "k9:9092"
    sasl_env = {**env, "OFFSETOPS_SECURITY_PROTOCOL": "SASL_SSL", "OFFSETOPS_SASL_USERNAME": "ops"}
    assert KafkaClientConfig.resolve(None, None, sasl_env).bootstrap_servers == "ignored:1"


def test_consumer_fetch_settings_from_client_properties(tmp_path: Path) -> None:
    """The Java consumer's names for what the live reader's Fetch uses; its defaults otherwise."""
    props = tmp_path / "fetch.properties"
    props.write_text(
        "bootstrap.servers=b:9092\nfetch.max.wait.ms=5000\nmax.partition.fetch.bytes=1048576\n"
        "retry.backoff.ms=50\nretry.backoff.max.ms=800\n"
    )
    config = KafkaClientConfig.from_file(props)
    assert (config.fetch_max_wait_ms, config.fetch_max_bytes) == (5000, 1 << 20)
    assert (config.retry_backoff_ms, config.retry_backoff_max_ms) == (50, 800)
    default = KafkaClientConfig("b:9092")
    assert (default.fetch_max_wait_ms, default.retry_backoff_ms, default.retry_backoff_max_ms) == (
        500,
        100,
        1000,
    )
    props.write_text("bootstrap.servers=b:9092\nfetch.max.wait.ms=soon\n")
    with pytest.raises(ClientConfigError, match="fetch_max_wait_ms must be an integer"):
        KafkaClientConfig.from_file(props)
    with pytest.raises(ClientConfigError, match="retry_backoff_max_ms is below retry_backoff_ms"):
        KafkaClientConfig("b:1", retry_backoff_ms=500, retry_backoff_max_ms=100)
    with pytest.raises(ClientConfigError, match="fetch_max_wait_ms must be positive"):
        KafkaClientConfig("b:1", fetch_max_wait_ms=0)


def test_bad_settings_are_one_line_errors(tmp_path: Path) -> None:
    jks = tmp_path / "jks.properties"
    jks.write_text("bootstrap.servers=b:9093\nssl.truststore.location=/x/truststore.jks\n")
    with pytest.raises(ClientConfigError, match=r"JKS store.*PEM"):
        KafkaClientConfig.from_file(jks)
    no_bootstrap = tmp_path / "none.properties"
    no_bootstrap.write_text("security.protocol=SSL\n")
    with pytest.raises(ClientConfigError, match=r"bootstrap\.servers is not set"):
        KafkaClientConfig.from_file(no_bootstrap)
    with pytest.raises(ClientConfigError, match="cannot read"):
        KafkaClientConfig.from_file(tmp_path / "absent.properties")
    with pytest.raises(ClientConfigError, match=r"security\.protocol"):
        KafkaClientConfig("b:1", security_protocol="TLS")
    with pytest.raises(ClientConfigError, match="not host:port"):
        KafkaClientConfig("b")
    with pytest.raises(ClientConfigError, match="SASL PLAIN needs a username and a password"):
        KafkaClientConfig("b:1", security_protocol="SASL_SSL", sasl_plain_password="only-a-password")
    with pytest.raises(ClientConfigError, match="no bootstrap servers"):
        KafkaClientConfig.resolve(None, None, {})
    kerberos = tmp_path / "k.properties"
    kerberos.write_text(
        "bootstrap.servers=b:1\nsasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required;\n"
    )
    with pytest.raises(ClientConfigError, match="login module"):
        KafkaClientConfig.from_file(kerberos)


def test_secrets_are_masked() -> None:
    config = KafkaClientConfig(
        "b1:9093,b2:9093",
        security_protocol="sasl_ssl",
        sasl_mechanism="plain",
        sasl_plain_username="svc",
        sasl_plain_password=CANARY,
        ssl_password="key-" + CANARY,
    )
    for text in (repr(config), str(config), f"{config!r}"):
        assert CANARY not in text and "'***'" in text and "b1:9093,b2:9093" in text
    assert config.redact(f"failed with {CANARY} and key-{CANARY}") == "failed with *** and key-***"
    assert config.client_kwargs()["sasl_plain_password"] == CANARY  # what kafka-python needs
    # A one-letter password is masked in repr but not scrubbed from text (it would garble every "b").
    short = KafkaClientConfig(
        "b:1", security_protocol="SASL_SSL", sasl_plain_username="u", sasl_plain_password="b"
    )
    assert "'***'" in repr(short) and short.redact("the broker enables") == "the broker enables"


def test_every_kafka_python_client_accepts_its_kwargs() -> None:
    config = KafkaClientConfig(
        "127.0.0.1:1",
        security_protocol="SASL_PLAINTEXT",
        sasl_plain_username="u",
        sasl_plain_password="p",
        connect_timeout_ms=1234,
    )
    for client in (KafkaAdminClient, KafkaConsumer, KafkaProducer, KafkaNetClient):
        kwargs = config.client_kwargs(client)
        known = set(getattr(client, "DEFAULT_CONFIG", {})) or None
        if known:
            assert set(kwargs) <= known, client
        assert kwargs["sasl_plain_password"] == "p" and kwargs["security_protocol"] == "SASL_PLAINTEXT"
    assert config.client_kwargs(KafkaAdminClient)["bootstrap_timeout_ms"] == 1234
    assert config.client_kwargs(KafkaNetClient)["socket_connection_setup_timeout_ms"] == 1234


def test_meta_properties_use_the_same_parser(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("#Sat\nversion=1\nnode.id = 3\ncluster.id=abc\n")
    assert read_broker_id(tmp_path) == 3


def test_reload_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from offsetops.cli import main

    assert main(["reload", str(tmp_path), "--bootstrap", "h:1"]) == 2
    assert "not both" in capsys.readouterr().err
    props = tmp_path / "c.properties"
    props.write_text("security.protocol=SSL\n")
    assert main(["reload", "--client-config", str(props)]) == 2
    assert capsys.readouterr().err == f"offsetops: error: {props}: bootstrap.servers is not set\n"


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL"])
def test_a_password_without_sasl_is_a_configuration_error(tmp_path: Path, protocol: str) -> None:
    """The client would connect without SASL and ignore the password: a typo, never silently accepted."""
    props = tmp_path / "c.properties"
    props.write_text(
        f"bootstrap.servers=k1:9092\nsecurity.protocol={protocol}\nsasl.username=ops\nsasl.password={CANARY}\n"
    )
    with pytest.raises(
        ClientConfigError, match=f"a SASL password is set but security.protocol is {protocol}"
    ) as exc:
        KafkaClientConfig.from_file(props)
    assert CANARY not in str(exc.value)
    env = {"OFFSETOPS_BOOTSTRAP_SERVERS": "k1:9092", "OFFSETOPS_SASL_PASSWORD": CANARY}
    with pytest.raises(ClientConfigError, match=r"security\.protocol is PLAINTEXT"):
        KafkaClientConfig.resolve(None, None, env)
