"""The bot token goes with every request to the Slack base URL: https only, http to loopback only."""

from __future__ import annotations

import pytest
from offsetops.assets.resources.slack import SlackResource
from offsetops.checks.alerting.transport import DeadlineWebClient, check_slack_base_url
from pydantic import ValidationError


@pytest.mark.parametrize(
    "url",
    ["https://slack.com/api/", "https://slack-proxy.internal:8443/api/", "http://127.0.0.1:8080/api/",
     "http://localhost:9/", "http://[::1]:8080/"],
)  # fmt: skip
def test_https_anywhere_and_http_on_loopback(url: str) -> None:
    assert check_slack_base_url(url) == url
    assert SlackResource(base_url=url).base_url == url


@pytest.mark.parametrize(
    "url",
    ["http://slack.com/api/", "http://10.0.0.7:8080/", "http://localhost.evil.example/", "ftp://slack.com/",
     "https:///api/", "http://127.0.0.1.nip.io/"],
)  # fmt: skip
def test_http_to_another_host_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="must be https://"):
        check_slack_base_url(url)
    with pytest.raises(ValidationError, match=r"must be https://|is not an http\(s\) URL"):
        SlackResource(base_url=url)
    with pytest.raises(ValueError, match="must be https://"):
        DeadlineWebClient(token="xoxb-canary", base_url=url)


def test_the_token_can_be_a_file_of_its_own(tmp_path, caplog) -> None:
    """A Kubernetes Secret key mounted as a file (deploy/helm/values.yaml): read when the notifier is
    built, never part of the resource's config; a link or a FIFO there is refused and logged."""
    import os

    from offsetops.assets.resources.state import StateResource

    state = StateResource(output_dir=str(tmp_path / "out"))
    token = tmp_path / "slack-bot-token"
    token.write_text("xoxb-file-canary\n")
    resource = SlackResource(token_file=str(token))
    assert "xoxb-file-canary" not in repr(resource.model_dump())
    assert "token=<set>" in repr(resource.notifier(state))
    link = tmp_path / "link"
    link.symlink_to(token)
    os.mkfifo(tmp_path / "fifo")
    for bad in (link, tmp_path / "fifo"):
        assert "token=<missing>" in repr(SlackResource(token_file=str(bad)).notifier(state))
    assert "Slack token file unreadable" in caplog.text and "xoxb-file-canary" not in caplog.text
