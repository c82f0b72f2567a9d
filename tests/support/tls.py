"""A TLS listener on loopback for tests: Debian's stunnel4 in front of a Tansu broker.

Tansu speaks PLAINTEXT only. stunnel terminates TLS with a throwaway CA's server certificate (made
here with ``cryptography``, for ``127.0.0.1`` and ``localhost``) and forwards the bytes to the broker,
which advertises stunnel's port in Metadata so every client connection goes through TLS. Clients
verify the broker with the CA file, exactly as against a real SSL listener. What TLS cannot show
here (mutual TLS principals, ACLs) is in docs/test-broker.md.

Also: the misbehaving servers the connect-timeout tests need (a listener that accepts and never
answers, one that closes every connection at once).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.broker import TansuBroker, find_tansu_binary, free_port


@dataclass(frozen=True)
class TestCA:
    """PEM files of a throwaway CA and a server certificate it signed."""

    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    #: The password of ``client_key`` (a secret canary for leak tests).
    client_key_password: str


def make_test_ca(directory: Path, *, key_password: str = "tls-key-canary-8c1f") -> TestCA:
    """A CA, a server certificate for 127.0.0.1/localhost, and an encrypted client key + cert."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def issue(
        subject: str,
        key: ec.EllipticCurvePrivateKey,
        issuer_key: ec.EllipticCurvePrivateKey,
        issuer: str,
        *,
        ca: bool,
        sans: list[x509.GeneralName] | None = None,
    ) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(subject))
            .issuer_name(name(issuer))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    def write_key(path: Path, key: ec.EllipticCurvePrivateKey, password: str | None = None) -> None:
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode())
            if password
            else serialization.NoEncryption()
        )
        path.write_bytes(
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
        )
        path.chmod(0o600)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = issue("offsetops test CA", ca_key, ca_key, "offsetops test CA", ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = issue(
        "localhost",
        server_key,
        ca_key,
        "offsetops test CA",
        ca=False,
        sans=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
    )
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = issue("offsetops-client", client_key, ca_key, "offsetops test CA", ca=False)
    out = TestCA(
        directory / "ca.pem",
        directory / "server.pem",
        directory / "server.key",
        directory / "client.pem",
        directory / "client.key",
        key_password,
    )
    out.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    out.server_cert.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    write_key(out.server_key, server_key)
    out.client_cert.write_bytes(client.public_bytes(serialization.Encoding.PEM))
    write_key(out.client_key, client_key, key_password)
    return out


def find_stunnel() -> str | None:
    return shutil.which("stunnel4") or shutil.which("stunnel")


def _wait_listening(port: int, timeout: float, proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
        time.sleep(0.05)
    return False


@dataclass
class TLSBroker:
    """A Tansu broker reachable only through stunnel's TLS port (``bootstrap``)."""

    broker: TansuBroker
    tls_port: int
    ca: TestCA

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.tls_port}"


@contextlib.contextmanager
def tls_broker() -> Iterator[TLSBroker]:
    """Tansu behind stunnel on loopback; skips the test when either binary is missing."""
    stunnel = find_stunnel()
    if stunnel is None:
        pytest.skip("stunnel4 not installed (scripts/ensure_system_deps.sh installs it)")
    if find_tansu_binary() is None:
        pytest.skip("tansu binary not found")
    with tempfile.TemporaryDirectory(prefix="offsetops-tls-") as tmp:
        work = Path(tmp)
        ca = make_test_ca(work / "pki")
        tls_port = free_port()
        broker = TansuBroker.start(advertised_port=tls_port)
        conf = work / "stunnel.conf"
        conf.write_text(
            "foreground = yes\n"
            f"pid =\n"
            "debug = 3\n"
            f"output = {work / 'stunnel.log'}\n"
            "[kafka]\n"
            f"accept = 127.0.0.1:{tls_port}\n"
            f"connect = 127.0.0.1:{broker.port}\n"
            f"cert = {ca.server_cert}\n"
            f"key = {ca.server_key}\n"
        )
        proc = subprocess.Popen(
            [stunnel, str(conf)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            if not _wait_listening(tls_port, 10, proc):
                log = (
                    (work / "stunnel.log").read_text(errors="replace")[-1500:]
                    if (work / "stunnel.log").exists()
                    else ""
                )
                raise RuntimeError(f"stunnel did not listen on {tls_port}: {log}")
            yield TLSBroker(broker, tls_port, ca)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
            broker.stop()


@pytest.fixture(scope="session")
def kafka_tls_broker() -> Iterator[TLSBroker]:
    """One TLS-fronted broker for the session (``.bootstrap`` is the TLS port, ``.ca`` its PKI)."""
    with tls_broker() as b:
        yield b


# -- servers that misbehave -----------------------------------------------------------------------


@contextlib.contextmanager
def misbehaving_server(kind: str) -> Iterator[str]:
    """``127.0.0.1:PORT`` of a loopback server that ``accepts`` and never answers (``silent``), or
    closes every connection as soon as it is accepted (``closing``)."""
    assert kind in ("silent", "closing")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if kind == "closing":
                conn.close()
            else:
                held.append(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=2)
        server.close()
        for conn in held:
            conn.close()
