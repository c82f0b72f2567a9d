"""``check_connection``: reach the cluster once, within ``connect_timeout_ms``, before any client is built.

TCP, TLS (with the very ``SSLContext`` the clients then use), ApiVersions, the SASL mechanism
handshake and Metadata, with blocking sockets and a deadline, then every advertised broker the same
way: kafka-python 3.0's own TLS handshake has no deadline (see the package docstring).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any

from offsetops.coordinator_core.kafka_client.config import ClusterUnreachable, KafkaClientConfig, error_reason

_API_VERSIONS, _SASL_HANDSHAKE, _METADATA = 18, 17, 3
# SaslHandshake error codes (Errors.java): 33 UNSUPPORTED_SASL_MECHANISM, 34 ILLEGAL_SASL_STATE.
_SASL_ERRORS = {33: "UNSUPPORTED_SASL_MECHANISM", 34: "ILLEGAL_SASL_STATE", 35: "UNSUPPORTED_VERSION"}


@dataclass(frozen=True)
class ConnectionCheck:
    """What :func:`check_connection` found: the server that answered, and the brokers advertised."""

    bootstrap: str
    brokers: tuple[tuple[int, str, int], ...]
    elapsed_ms: float


class _Probe:
    """One blocking connection with a deadline: TCP, then TLS, then Kafka requests."""

    def __init__(
        self, config: KafkaClientConfig, ctx: ssl.SSLContext | None, host: str, port: int, deadline: float
    ) -> None:
        self.config, self.ctx, self.host, self.port, self.deadline = config, ctx, host, port, deadline
        self.sock: socket.socket | None = None
        self.correlation = 0

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left

    def _resolve(self) -> list[str]:
        """The host's addresses; ``getaddrinfo`` has no timeout, so it runs where we can stop waiting."""
        result: list[Any] = []

        def lookup() -> None:
            try:
                result.append(socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM))
            except OSError as exc:
                result.append(exc)

        thread = threading.Thread(target=lookup, name="offsetops-dns", daemon=True)
        thread.start()
        thread.join(self._left())
        if not result:
            raise ClusterUnreachable(f"DNS lookup of {self.host} did not answer in time")
        if isinstance(result[0], OSError):
            raise ClusterUnreachable(f"cannot resolve {self.host}: {error_reason(result[0])}")
        return list(dict.fromkeys(str(info[4][0]) for info in result[0]))

    def _connect_any(self) -> socket.socket:
        """TCP to each address in turn, as ``socket.create_connection`` does, within the deadline."""
        last: OSError | None = None
        for address in self._resolve():
            try:
                return socket.create_connection((address, self.port), timeout=self._left())
            except TimeoutError:
                raise
            except OSError as exc:
                last = exc
        raise last or OSError("no address")

    def connect(self) -> None:
        try:
            sock = self._connect_any()
        except TimeoutError:
            raise ClusterUnreachable("TCP connect timed out") from None
        except OSError as exc:
            raise ClusterUnreachable(f"TCP connect failed: {error_reason(exc)}") from None
        self.sock = sock
        if self.ctx is None:
            return
        try:
            sock.settimeout(self._left())
            tls = self.ctx.wrap_socket(sock, server_hostname=self.host, do_handshake_on_connect=False)
            self.sock = tls
            tls.do_handshake()
        except TimeoutError:
            raise ClusterUnreachable(
                "no TLS answer (the listener is probably PLAINTEXT or SASL_PLAINTEXT: check "
                "security.protocol)"
            ) from None
        except ssl.SSLCertVerificationError as exc:
            raise ClusterUnreachable(
                f"TLS certificate verification failed: {exc.verify_message} (check ssl.truststore / "
                "ssl.ca.location, and that the certificate names the host you connect to)"
            ) from None
        except (ssl.SSLEOFError, ConnectionResetError, BrokenPipeError):
            raise ClusterUnreachable(
                "the server closed the connection during the TLS handshake (a PLAINTEXT listener, or "
                "one that requires a client certificate)"
            ) from None
        except ssl.SSLError as exc:
            raise ClusterUnreachable(f"TLS handshake failed: {error_reason(exc)}") from None
        except OSError as exc:
            raise ClusterUnreachable(f"TLS handshake failed: {error_reason(exc)}") from None

    def request(self, api_key: int, version: int, body: bytes, name: str, hint: str | None = None) -> bytes:
        assert self.sock is not None
        self.correlation += 1
        client_id = self.config.client_id.encode()
        header = struct.pack(">hhih", api_key, version, self.correlation, len(client_id)) + client_id
        hint = hint or (
            "not a Kafka listener, or a TLS one: check the address and security.protocol"
            if not self.config.uses_ssl
            else "not a Kafka listener behind the TLS?"
        )
        try:
            self.sock.settimeout(self._left())
            self.sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
            (size,) = struct.unpack(">i", self._recv(4))
            if not 4 <= size <= 64 << 20:
                raise ClusterUnreachable(f"{name}: the answer is not Kafka's ({hint})")
            payload = self._recv(size)
        except TimeoutError:
            raise ClusterUnreachable(f"no answer to {name} ({hint})") from None
        except ConnectionError:
            raise ClusterUnreachable(f"the server closed the connection at {name} ({hint})") from None
        except ssl.SSLError as exc:
            raise ClusterUnreachable(f"TLS failed at {name}: {error_reason(exc)}") from None
        except OSError as exc:
            raise ClusterUnreachable(f"{name} failed: {error_reason(exc)}") from None
        (correlation,) = struct.unpack_from(">i", payload, 0)
        if correlation != self.correlation:
            raise ClusterUnreachable(f"{name}: the answer is not Kafka's ({hint})")
        return payload[4:]

    def _recv(self, n: int) -> bytes:
        assert self.sock is not None
        buf = bytearray()
        while len(buf) < n:
            self.sock.settimeout(self._left())
            chunk = self.sock.recv(min(n - len(buf), 1 << 16))
            if not chunk:
                raise ConnectionError
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
            self.sock = None


def _string(b: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", b, pos)
    pos += 2
    if n < 0:
        return "", pos
    return b[pos : pos + n].decode("utf-8", "replace"), pos + n


def _probe_server(
    config: KafkaClientConfig,
    ctx: ssl.SSLContext | None,
    host: str,
    port: int,
    deadline: float,
    *,
    metadata: bool,
) -> list[tuple[int, str, int]]:
    probe = _Probe(config, ctx, host, port, deadline)
    try:
        probe.connect()
        # ApiVersions v0 comes before SASL on every listener (KIP-35), so it tells a Kafka listener apart.
        answer = probe.request(_API_VERSIONS, 0, b"", "ApiVersions")
        (error,) = struct.unpack_from(">h", answer, 0)
        if error:
            raise ClusterUnreachable(f"ApiVersions failed with error {error}")
        if config.uses_sasl:
            mechanism = (config.sasl_mechanism or "PLAIN").encode()
            answer = probe.request(
                _SASL_HANDSHAKE,
                1,
                struct.pack(">h", len(mechanism)) + mechanism,
                "SaslHandshake",
                f"the listener does not take SASL {config.sasl_mechanism}: check sasl.mechanism",
            )
            (error,) = struct.unpack_from(">h", answer, 0)
            if error:
                (count,) = struct.unpack_from(">i", answer, 2)
                offered, pos = [], 6
                for _ in range(max(count, 0)):
                    name, pos = _string(answer, pos)
                    offered.append(name)
                raise ClusterUnreachable(
                    f"SASL handshake refused: {_SASL_ERRORS.get(error, f'error {error}')} for mechanism "
                    f"{config.sasl_mechanism} (the broker enables: {', '.join(offered) or 'none'})"
                )
            # The credentials themselves are checked by the client's SaslAuthenticate, which is bounded.
            return []
        if not metadata:
            return []
        # Metadata v1 with an empty topic list: the brokers only (KIP-4), where clients go next.
        answer = probe.request(
            _METADATA,
            1,
            struct.pack(">i", 0),
            "Metadata",
            "a SASL listener answers ApiVersions but nothing else before login: check security.protocol",
        )
        (count,) = struct.unpack_from(">i", answer, 0)
        brokers, pos = [], 4
        for _ in range(count):
            (node,) = struct.unpack_from(">i", answer, pos)
            bhost, pos = _string(answer, pos + 4)
            (bport,) = struct.unpack_from(">i", answer, pos)
            _rack, pos = _string(answer, pos + 4)
            brokers.append((node, bhost, bport))
        return brokers
    except (TimeoutError, struct.error) as exc:
        raise ClusterUnreachable(
            "no usable answer in time" if isinstance(exc, TimeoutError) else "the answer is not Kafka's"
        ) from None
    finally:
        probe.close()


def check_connection(config: KafkaClientConfig, *, timeout_ms: int | None = None) -> ConnectionCheck:
    """Reach the cluster once, within ``connect_timeout_ms``, as its clients will.

    Each bootstrap server in turn until one answers: TCP, TLS (certificate verified with the
    configured CA), ApiVersions, and for SASL the mechanism handshake; then every broker the cluster
    advertises (Metadata) gets TCP, TLS and ApiVersions too, since clients connect there next.
    Raises :class:`ClusterUnreachable` naming the cluster and the reason, never a secret.
    """
    started = time.monotonic()
    timeout_ms = timeout_ms or config.connect_timeout_ms
    deadline = started + timeout_ms / 1000
    ctx = config.ssl_context()
    failures: list[str] = []
    servers = config.servers
    for i, server in enumerate(servers):
        host, _, port = server.rpartition(":")
        # Every server gets a fair share of what is left, so one black hole cannot eat the rest.
        share = (deadline - time.monotonic()) / (len(servers) - i)
        try:
            brokers = _probe_server(
                config, ctx, host.strip("[]"), int(port), time.monotonic() + share, metadata=True
            )
        except ClusterUnreachable as exc:
            failures.append(f"{server}: {exc}")
            continue
        for node, bhost, bport in brokers:
            if f"{bhost}:{bport}" == server:
                continue
            try:
                _probe_server(config, ctx, bhost, bport, deadline, metadata=False)
            except ClusterUnreachable as exc:
                raise ClusterUnreachable(
                    config.redact(
                        f"{config.describe()}: broker {node} at {bhost}:{bport}, as the cluster "
                        f"advertises it, is not reachable: {exc} (check advertised.listeners)"
                    )
                ) from None
        return ConnectionCheck(server, tuple(brokers), (time.monotonic() - started) * 1000)
    raise ClusterUnreachable(
        config.redact(
            f"cannot reach {config.describe()} within {timeout_ms / 1000:g}s: {'; '.join(failures)}"
        )
    )
