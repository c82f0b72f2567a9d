"""``KafkaClientConfig``: the settings of every Kafka client, from the environment, a Java
``client.properties`` and explicit overrides, with the secrets masked everywhere they could show."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from offsetops.coordinator_core.untrusted import UntrustedFileError, read_regular_file

if TYPE_CHECKING:  # the TLS stack is imported when a context is built (a log dir's reload never does)
    import ssl

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")
DEFAULT_CONNECT_TIMEOUT_MS = 10_000
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
#: The Java consumer's defaults for ``fetch.max.wait.ms``, ``retry.backoff.ms`` and ``retry.backoff.max.ms``
#: (``ConsumerConfig``; the exponential back-off is KIP-580's).
DEFAULT_FETCH_MAX_WAIT_MS = 500
DEFAULT_RETRY_BACKOFF_MS = 100
DEFAULT_RETRY_BACKOFF_MAX_MS = 1000
_MASK = "'***'"

#: ``OFFSETOPS_*`` variable -> field.
ENVIRONMENT: dict[str, str] = {
    "OFFSETOPS_BOOTSTRAP_SERVERS": "bootstrap_servers",
    "OFFSETOPS_SECURITY_PROTOCOL": "security_protocol",
    "OFFSETOPS_SASL_MECHANISM": "sasl_mechanism",
    "OFFSETOPS_SASL_USERNAME": "sasl_plain_username",
    "OFFSETOPS_SASL_PASSWORD": "sasl_plain_password",
    "OFFSETOPS_SSL_CAFILE": "ssl_cafile",
    "OFFSETOPS_SSL_CERTFILE": "ssl_certfile",
    "OFFSETOPS_SSL_KEYFILE": "ssl_keyfile",
    "OFFSETOPS_SSL_KEY_PASSWORD": "ssl_password",
    "OFFSETOPS_SSL_CHECK_HOSTNAME": "ssl_check_hostname",
    "OFFSETOPS_CLIENT_ID": "client_id",
    "OFFSETOPS_REQUEST_TIMEOUT_MS": "request_timeout_ms",
    "OFFSETOPS_CONNECT_TIMEOUT_MS": "connect_timeout_ms",
    "OFFSETOPS_FETCH_MAX_WAIT_MS": "fetch_max_wait_ms",
}

#: ``client.properties`` key -> field, for keys that map one to one (Java names, then librdkafka's).
PROPERTIES: dict[str, str] = {
    "bootstrap.servers": "bootstrap_servers",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "client.id": "client_id",
    "request.timeout.ms": "request_timeout_ms",
    "socket.connection.setup.timeout.ms": "connect_timeout_ms",
    "fetch.max.wait.ms": "fetch_max_wait_ms",
    "max.partition.fetch.bytes": "fetch_max_bytes",
    "retry.backoff.ms": "retry_backoff_ms",
    "retry.backoff.max.ms": "retry_backoff_max_ms",
    "ssl.key.password": "ssl_password",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
}

_SECRET_FIELDS = ("sasl_plain_password", "ssl_password")
_MIN_SCRUB = 4
_INT_FIELDS = (
    "request_timeout_ms",
    "connect_timeout_ms",
    "fetch_max_bytes",
    "fetch_max_wait_ms",
    "retry_backoff_ms",
    "retry_backoff_max_ms",
)


class KafkaClientError(Exception):
    """A Kafka connection cannot be configured or made; the message names the cluster, never a secret."""


class ClientConfigError(KafkaClientError):
    """The client settings are unusable (an unreadable file, a bad value, an unsupported key store)."""


class ClusterUnreachable(KafkaClientError):
    """The cluster could not be reached, refused the TLS or SASL handshake, or stopped answering."""


class _Redact(logging.Filter):
    """Replaces registered secrets in every record a handler emits."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            message = record.getMessage()
            for secret in self.secrets:
                message = message.replace(secret, "***")
            record.msg, record.args = message, None
        return True


_REDACT = _Redact()


def parse_properties(text: str) -> dict[str, str]:
    """A Java ``.properties`` document, with ``java.util.Properties.load`` semantics.

    ``key=value``/``key: value``/``key value``, ``#``/``!`` comments, ``\\`` line continuations,
    escapes including ``\\uXXXX``. The one ``.properties`` reader of the project.
    """
    import javaproperties  # imported here: with its XML side it is a tenth of every command's start-up

    return dict(javaproperties.loads(text))


def read_properties(path: str | os.PathLike[str], *, kind: str = "properties") -> dict[str, str]:
    """:func:`parse_properties` of a file (Java reads ``.properties`` as ISO-8859-1; UTF-8 is what
    operators write today, and ``\\uXXXX`` escapes mean the same in both). The file is checked first
    (:func:`~offsetops.coordinator_core.untrusted.read_regular_file`: a regular file within the limit of
    its ``kind``), so a FIFO or ``/dev/zero`` is an OSError naming it, never a hang."""
    raw = read_regular_file(path, kind=kind)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return parse_properties(text)


def _parse_bool(value: str, name: str, source: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no", ""):
        return False
    raise ClientConfigError(f"{source}: {name} must be true or false, got {value!r}")


@dataclass(frozen=True, repr=False)
class KafkaClientConfig:
    """How to reach a cluster: bootstrap servers, security protocol, SASL, TLS and timeouts.

    ``bootstrap_servers`` is a comma-separated ``host:port`` list. ``repr``/``str`` mask the SASL
    password and the TLS key password.
    """

    bootstrap_servers: str
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_plain_username: str | None = None
    sasl_plain_password: str | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    #: Password of the TLS private key (``ssl.key.password``).
    ssl_password: str | None = None
    ssl_check_hostname: bool = True
    client_id: str = "offsetops"
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    #: Bound on reaching the cluster at all (TCP, TLS, ApiVersions, SASL, first Metadata).
    connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS
    #: Per-partition Fetch size of the live reload; grown automatically when one batch is bigger.
    fetch_max_bytes: int = 4 << 20
    #: How long a Fetch may wait for data (``fetch.max.wait.ms``); a broker with data below the high
    #: watermark answers at once.
    fetch_max_wait_ms: int = DEFAULT_FETCH_MAX_WAIT_MS
    #: Back-off before retrying an empty or failed Fetch, doubled up to ``retry_backoff_max_ms``.
    retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS
    retry_backoff_max_ms: int = DEFAULT_RETRY_BACKOFF_MAX_MS
    #: Where the settings came from (for error messages).
    source: str = dataclasses.field(default="arguments", compare=False)

    def _one_of(self, key: str, value: str, allowed: tuple[str, ...]) -> str:
        """``value`` in Kafka's upper-case spelling, or a ClientConfigError naming ``key`` and the choices."""
        normal = value.strip().upper()
        if normal not in allowed:
            raise ClientConfigError(f"{self.source}: unknown {key} {value!r} (one of {', '.join(allowed)})")
        return normal

    def __post_init__(self) -> None:
        if not self.bootstrap_servers or not self.bootstrap_servers.strip():
            raise ClientConfigError(f"{self.source}: bootstrap servers are empty")
        for server in self.servers:
            host, _, port = server.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ClientConfigError(f"{self.source}: bootstrap server {server!r} is not host:port")
        object.__setattr__(
            self,
            "security_protocol",
            self._one_of("security.protocol", self.security_protocol, SECURITY_PROTOCOLS),
        )
        if self.sasl_mechanism is not None:
            object.__setattr__(
                self, "sasl_mechanism", self._one_of("sasl.mechanism", self.sasl_mechanism, SASL_MECHANISMS)
            )
        if self.uses_sasl and self.sasl_mechanism is None:
            object.__setattr__(self, "sasl_mechanism", "PLAIN")  # Kafka's default sasl.mechanism
        if (
            self.uses_sasl
            and self.sasl_mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
            and (not self.sasl_plain_username or self.sasl_plain_password is None)
        ):
            raise ClientConfigError(
                f"{self.source}: SASL {self.sasl_mechanism} needs a username and a password "
                "(sasl.jaas.config, or OFFSETOPS_SASL_USERNAME and OFFSETOPS_SASL_PASSWORD)"
            )
        if self.sasl_plain_password and not self.uses_sasl:
            # the client would connect without SASL and never use it: a protocol typo, not a choice
            raise ClientConfigError(
                f"{self.source}: a SASL password is set but security.protocol is {self.security_protocol}, "
                "which does no SASL authentication; set security.protocol=SASL_SSL (or SASL_PLAINTEXT), "
                "or remove the password"
            )
        for name in _INT_FIELDS:
            if getattr(self, name) <= 0:
                raise ClientConfigError(f"{self.source}: {name} must be positive")
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ClientConfigError(f"{self.source}: retry_backoff_max_ms is below retry_backoff_ms")
        # Whatever logs through a handler quiet_kafka_logging() set up masks these from now on.
        _REDACT.secrets.update(self.secrets())

    # -- what it says -------------------------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        # Unpickled (on a Spark executor) through __init__: the checks run there too, and that
        # process learns the secrets to mask in its own log handlers.
        return _config_from_fields, ({f.name: getattr(self, f.name) for f in dataclasses.fields(self)},)

    def __repr__(self) -> str:
        shown = []
        for f in dataclasses.fields(self):
            if f.name == "source":
                continue
            value = getattr(self, f.name)
            masked = f.name in _SECRET_FIELDS and value is not None
            shown.append(f"{f.name}={_MASK if masked else repr(value)}")
        return f"KafkaClientConfig({', '.join(shown)})"

    __str__ = __repr__

    @property
    def servers(self) -> list[str]:
        return [s.strip() for s in self.bootstrap_servers.split(",") if s.strip()]

    @property
    def uses_ssl(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def describe(self) -> str:
        """``Kafka at host:port (SASL_SSL)``: how errors name the cluster."""
        return f"Kafka at {self.bootstrap_servers} ({self.security_protocol})"

    def secrets(self) -> tuple[str, ...]:
        """The secrets to scrub from foreign text. Scrubbing a 1-3 character password would garble
        every message that contains those letters; offsetops never puts a secret into a message of its
        own, so scrubbing is the second line of defence and needs no such cases."""
        return tuple(v for v in (getattr(self, n) for n in _SECRET_FIELDS) if v and len(v) >= _MIN_SCRUB)

    def redact(self, text: object) -> str:
        """``text`` with every secret of this configuration replaced by ``***``."""
        out = str(text)
        for secret in self.secrets():
            out = out.replace(secret, "***")
        return out

    def replace(self, **changes: Any) -> KafkaClientConfig:
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    # -- what kafka-python gets ---------------------------------------------------------------------

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of this configuration (None for PLAINTEXT/SASL_PLAINTEXT).

        Built here rather than by kafka-python so the connection check and every client verify the
        broker with exactly the same CA, hostname rule and client certificate.
        """
        if not self.uses_ssl:
            return None
        import ssl

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.check_hostname = self.ssl_check_hostname
        try:
            if self.ssl_cafile:
                ctx.load_verify_locations(cafile=self.ssl_cafile)
            else:
                ctx.load_default_certs()
        except (OSError, ssl.SSLError) as exc:
            raise ClientConfigError(
                f"{self.source}: cannot load the CA file {self.ssl_cafile}: {error_reason(exc)}"
            ) from None
        if self.ssl_certfile:
            try:
                ctx.load_cert_chain(self.ssl_certfile, self.ssl_keyfile, password=self.ssl_password or None)
            except (OSError, ssl.SSLError) as exc:
                # The exception text never carries the key password, but be certain.
                raise ClientConfigError(
                    self.redact(
                        f"{self.source}: cannot load the client certificate {self.ssl_certfile}"
                        f"{f' / key {self.ssl_keyfile}' if self.ssl_keyfile else ''}: {error_reason(exc)} "
                        "(wrong ssl.key.password, or key and certificate do not match)"
                    )
                ) from None
        return ctx

    def client_kwargs(
        self, client: Any = None, *, ssl_context: ssl.SSLContext | None = None, **extra: Any
    ) -> dict[str, Any]:
        """Keyword arguments for a kafka-python client class (``KafkaAdminClient``, ``KafkaConsumer``,
        ``KafkaProducer``, ``KafkaNetClient``); keys that class does not know are left out.

        Includes the password: never log the result.
        """
        kwargs: dict[str, Any] = {
            "bootstrap_servers": self.servers,
            "client_id": self.client_id,
            "security_protocol": self.security_protocol,
            "request_timeout_ms": self.request_timeout_ms,
            "bootstrap_timeout_ms": self.connect_timeout_ms,
            "socket_connection_setup_timeout_ms": self.connect_timeout_ms,
            "socket_connection_setup_timeout_max_ms": self.connect_timeout_ms,
            # A short back-off, so several attempts fit into connect_timeout_ms.
            "reconnect_backoff_ms": 100,
            "reconnect_backoff_max_ms": 1000,
            # KafkaProducer.send blocks on metadata for at most this long.
            "max_block_ms": self.connect_timeout_ms + self.request_timeout_ms,
        }
        if self.uses_ssl:
            kwargs["ssl_context"] = ssl_context or self.ssl_context()
            kwargs["ssl_check_hostname"] = self.ssl_check_hostname
        if self.uses_sasl:
            kwargs["sasl_mechanism"] = self.sasl_mechanism
            kwargs["sasl_plain_username"] = self.sasl_plain_username
            kwargs["sasl_plain_password"] = self.sasl_plain_password
        kwargs.update(extra)
        known = _known_keys(client)
        return kwargs if known is None else {k: v for k, v in kwargs.items() if k in known}

    # -- where it comes from ------------------------------------------------------------------------

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> KafkaClientConfig:
        """From ``OFFSETOPS_*`` variables (see :data:`ENVIRONMENT`); ``OFFSETOPS_BOOTSTRAP_SERVERS``
        is required unless ``bootstrap_servers`` is passed."""
        return cls._build(_env_values(environ), overrides, source="environment")

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], environ: Mapping[str, str] | None = None, **overrides: Any
    ) -> KafkaClientConfig:
        """From a Java ``client.properties`` file, over the ``OFFSETOPS_*`` environment when
        ``environ`` is given (a password can stay out of the file).

        Keys: ``bootstrap.servers``, ``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config``
        (``username``/``password`` of the PLAIN or SCRAM login module), ``ssl.truststore.location``
        with ``ssl.truststore.type=PEM``, ``ssl.keystore.location`` with ``ssl.keystore.type=PEM``
        (key and certificate chain in one file), ``ssl.key.password``,
        ``ssl.endpoint.identification.algorithm`` (empty turns hostname checks off), ``client.id``,
        ``request.timeout.ms``, ``socket.connection.setup.timeout.ms``, ``fetch.max.wait.ms``,
        ``max.partition.fetch.bytes``, ``retry.backoff.ms``, ``retry.backoff.max.ms``; librdkafka's
        ``sasl.username``/``sasl.password``, ``ssl.ca.location``, ``ssl.certificate.location``,
        ``ssl.key.location``. Other consumer and producer tuning keys are ignored. JKS and PKCS12 stores are
        refused with a clear error: Python's ``ssl`` module reads PEM.
        """
        p = Path(path)
        try:
            props = read_properties(p, kind="client config")
        except UntrustedFileError as exc:
            raise ClientConfigError(f"cannot read Kafka client properties: {exc}") from None
        except OSError as exc:
            raise ClientConfigError(
                f"cannot read Kafka client properties {p}: {exc.strerror or exc}"
            ) from None
        values = _env_values(environ) if environ is not None else {}
        values.update(_property_values(props, str(p)))
        return cls._build(values, overrides, source=str(p))

    @classmethod
    def resolve(
        cls,
        bootstrap_servers: str | None = None,
        client_config: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> KafkaClientConfig:
        """What an operator gave: the ``OFFSETOPS_*`` environment, then ``client_config``
        (client.properties) over it, then ``bootstrap_servers`` and ``overrides`` over both."""
        env = os.environ if environ is None else environ
        overrides = {"bootstrap_servers": bootstrap_servers, **overrides}
        if client_config:
            return cls.from_file(client_config, env, **overrides)
        return cls.from_env(env, **overrides)

    @classmethod
    def _build(
        cls, values: dict[str, Any], overrides: Mapping[str, Any], *, source: str
    ) -> KafkaClientConfig:
        values = {**values, **{k: v for k, v in overrides.items() if v is not None}}
        if not values.get("bootstrap_servers"):
            where = (
                "bootstrap.servers is not set"
                if source != "environment"
                else (
                    "no bootstrap servers: give --bootstrap HOST:PORT, a client config with "
                    "bootstrap.servers, or set OFFSETOPS_BOOTSTRAP_SERVERS"
                )
            )
            raise ClientConfigError(f"{source}: {where}" if source != "environment" else where)
        for name in _INT_FIELDS:
            if isinstance(values.get(name), str):
                try:
                    values[name] = int(values[name].strip())
                except ValueError:
                    raise ClientConfigError(f"{source}: {name} must be an integer") from None
        if isinstance(values.get("ssl_check_hostname"), str):
            values["ssl_check_hostname"] = _parse_bool(
                values["ssl_check_hostname"], "ssl_check_hostname", source
            )
        return cls(**values, source=source)


def _config_from_fields(values: dict[str, Any]) -> KafkaClientConfig:
    return KafkaClientConfig(**values)


def _env_values(environ: Mapping[str, str] | None) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    return {field: env[var] for var, field in ENVIRONMENT.items() if env.get(var, "").strip()}


def _property_values(props: Mapping[str, str], source: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, field in PROPERTIES.items():
        if props.get(key, "").strip():
            values.setdefault(field, props[key].strip())
    if props.get("sasl.jaas.config", "").strip():
        user, password = _parse_jaas(props["sasl.jaas.config"], source)
        values.setdefault("sasl_plain_username", user)
        values.setdefault("sasl_plain_password", password)
    for store, field in (("truststore", "ssl_cafile"), ("keystore", "ssl_certfile")):
        location = props.get(f"ssl.{store}.location", "").strip()
        if not location:
            continue
        kind = props.get(f"ssl.{store}.type", "JKS").strip().upper()
        if kind != "PEM":
            raise ClientConfigError(
                f"{source}: ssl.{store}.location is a {kind} store; offsetops reads PEM: set "
                f"ssl.{store}.type=PEM (convert with keytool/openssl) or use librdkafka's "
                f"{'ssl.ca.location' if store == 'truststore' else 'ssl.certificate.location'}"
            )
        values.setdefault(field, location)
    for inline in ("ssl.truststore.certificates", "ssl.keystore.key", "ssl.keystore.certificate.chain"):
        if props.get(inline, "").strip():
            raise ClientConfigError(
                f"{source}: {inline} (PEM inline in the file) is not supported; "
                "put the PEM in a file and point ssl.*.location at it"
            )
    if "ssl.endpoint.identification.algorithm" in props:
        values["ssl_check_hostname"] = props["ssl.endpoint.identification.algorithm"].strip() != ""
    return values


_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def _parse_jaas(jaas: str, source: str) -> tuple[str | None, str | None]:
    """``username``/``password`` of a PLAIN or SCRAM ``LoginModule`` entry (``JaasConfig``: inside
    quotes a backslash escapes the next character)."""
    if not re.search(r"\b(PlainLoginModule|ScramLoginModule)\b", jaas):
        raise ClientConfigError(
            f"{source}: sasl.jaas.config uses a login module offsetops does not support "
            "(PlainLoginModule and ScramLoginModule are)"
        )
    opts: dict[str, str] = {}
    for name, quoted, bare in _JAAS_OPTION.findall(jaas):
        opts[name] = re.sub(r"\\(.)", r"\1", quoted) if quoted or not bare else bare
    return opts.get("username"), opts.get("password")


def _known_keys(client: Any) -> set[str] | None:
    """The configuration keys a kafka-python client class accepts (None: pass everything)."""
    if client is None:
        return None
    from kafka.net.compat import KafkaNetClient

    if client is KafkaNetClient:
        from kafka.net.manager import KafkaConnectionManager

        return set(KafkaConnectionManager.DEFAULT_CONFIG)
    defaults = getattr(client, "DEFAULT_CONFIG", None)
    return set(defaults) if defaults is not None else None


def error_reason(exc: BaseException) -> str:
    if "ssl" in sys.modules:  # a TLS error exists only once the TLS stack was imported
        import ssl

        if isinstance(exc, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {exc.verify_message}"
        if isinstance(exc, ssl.SSLError):
            return exc.reason or exc.strerror or type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
