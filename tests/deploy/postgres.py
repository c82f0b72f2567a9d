"""A throwaway PostgreSQL server on loopback, from Debian's ``postgresql`` package.

``initdb`` a cluster in a temp dir, start it with ``pg_ctl`` on a free port bound to 127.0.0.1 with
password (scram-sha-256) authentication over TCP and TLS with a certificate for 127.0.0.1 from a
throwaway CA (``deploy/dagster.yaml`` asks for ``sslmode: verify-full``; clients find the CA through
``PGSSLROOTCERT``), and stop and delete it afterwards. PostgreSQL refuses to run as root, so as root the
server runs as the ``postgres`` system user (``runuser``).
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.broker import free_port
from tests.support.tls import make_test_ca

START_TIMEOUT_S = 60


def postgres_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<major>/bin`` that has ``initdb`` and ``pg_ctl``, else None."""
    found = [Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin") if Path(p, "pg_ctl").exists()]
    found.sort(key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    return found[-1] if found else None


@dataclass(frozen=True)
class PostgresServer:
    """Where a running server listens and how to log in (a fresh database and role)."""

    host: str
    port: int
    user: str
    password: str = field(repr=False)
    database: str
    bin_dir: Path
    #: the CA that signed the server's certificate (for PGSSLROOTCERT)
    ca_cert: Path | None = None

    def env(self) -> dict[str, str]:
        """The ``DAGSTER_PG_*`` variables ``deploy/dagster.yaml`` reads, and the CA libpq verifies with."""
        return {
            **({"PGSSLROOTCERT": str(self.ca_cert)} if self.ca_cert else {}),
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USERNAME": self.user,
            "DAGSTER_PG_PASSWORD": self.password,
            "DAGSTER_PG_DB": self.database,
        }

    def query(self, sql: str) -> list[list[str]]:
        """Run ``sql`` with ``psql`` over TCP as the test role; rows of text columns."""
        out = subprocess.run(
            [
                str(self.bin_dir / "psql"),
                "-h",
                self.host,
                "-p",
                str(self.port),
                "-U",
                self.user,
                "-d",
                self.database,
                "-At",
                "-F",
                "\t",
                "-c",
                sql,
            ],
            env={**os.environ, **self.env(), "PGPASSWORD": self.password, "PGCONNECT_TIMEOUT": "10"},
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return [line.split("\t") for line in out.stdout.splitlines() if line]


def _as_server_user() -> tuple[list[str], int | None, int | None]:
    """The command prefix and uid/gid to run the server as: ``postgres`` when we are root."""
    if os.geteuid() != 0:
        return [], None, None
    entry = pwd.getpwnam("postgres")  # created by Debian's postgresql-common
    return ["runuser", "-u", "postgres", "--"], entry.pw_uid, entry.pw_gid


def run_postgres(bin_dir: Path) -> Iterator[PostgresServer]:
    """Start a server, yield it, stop it and remove its files (also when the test failed)."""
    prefix, uid, gid = _as_server_user()
    root = Path(tempfile.mkdtemp(prefix="offsetops-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    password = secrets.token_urlsafe(16)
    pwfile = root / "pwfile"
    pwfile.write_text(password + "\n", encoding="utf-8")
    ca = make_test_ca(root / "tls")
    if uid is not None:
        for path in (root, sock, pwfile, root / "tls", ca.server_cert, ca.server_key):
            os.chown(path, uid, gid)
    user = database = "dagster"
    port = free_port()
    try:
        subprocess.run(
            [
                *prefix,
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                user,
                f"--pwfile={pwfile}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -k {sock} -c fsync=off -c shared_buffers=32MB "
            f"-c ssl=on -c ssl_cert_file={ca.server_cert} -c ssl_key_file={ca.server_key}"
        )
        subprocess.run(
            [
                *prefix,
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(root / "server.log"),
                "-w",
                "-t",
                str(START_TIMEOUT_S),
                "start",
            ],
            check=True,
            capture_output=True,
            timeout=START_TIMEOUT_S + 10,
        )
        subprocess.run(
            [*prefix, str(bin_dir / "createdb"), "-h", str(sock), "-p", str(port), "-U", user, database],
            check=True,
            capture_output=True,
            timeout=60,
        )
        yield PostgresServer("127.0.0.1", port, user, password, database, bin_dir, ca.ca_cert)
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(root, ignore_errors=True)
