"""A Kafka client configuration that would send no SASL while a password is set is a usage error (2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from offsetops.cli import main

CANARY = "cli-password-canary-77aa"


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL"])
def test_a_password_with_a_protocol_without_sasl_exits_2(tmp_path: Path, capsys, protocol: str) -> None:
    props = tmp_path / "client.properties"
    props.write_text(
        f"bootstrap.servers=127.0.0.1:1\nsecurity.protocol={protocol}\nsasl.mechanism=PLAIN\n"
        f"sasl.username=ops\nsasl.password={CANARY}\n"
    )
    assert main(["groups", "--client-config", str(props)]) == 2
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert f"a SASL password is set but security.protocol is {protocol}" in line and CANARY not in err
