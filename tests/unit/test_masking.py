"""One masking of secrets: URLs (password, query, fragment), free text, and the command line a run stores."""

from __future__ import annotations

import pytest

from packsolve.masking import mask_argv, mask_text, mask_url


@pytest.mark.parametrize(
    "url, shown",
    [
        ("postgresql://u:pw@db:5432/x", "postgresql://u:***@db:5432/x"),
        ("redis://:pw@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("postgresql://u@db/x?password=pw&sslmode=require", "postgresql://u@db/x?password=***&sslmode=***"),
        ("https://hooks.example/h?token=pw#pw", "https://hooks.example/h?token=***#***"),
        ("postgresql://u:p/w@db/x", "postgresql://***"),  # an unescaped / in the password
        ("postgresql://u:12#34@db/x", "postgresql://***"),  # a # cuts the password short
        ("sqlite:////tmp/packsolve.db", "sqlite:////tmp/packsolve.db"),
    ],
)
def test_a_url_keeps_where_and_loses_every_secret(url, shown):
    assert mask_url(url) == shown


def test_every_url_in_text_is_masked():
    text = "cannot reach redis://:pw@h:1/0 (then amqp://g:pw2@h//?heartbeat=pw3): refused"
    assert mask_text(text) == "cannot reach redis://:***@h:1/0 (then amqp://g:***@h//?heartbeat=***): refused"


def test_a_stored_command_line_keeps_no_notification_secret_nor_a_url_secret():
    argv = [
        "solve",
        "pack",
        "--database-url=postgresql://u@db/x?password=pw1",
        "--notify",
        "curl -H 'Authorization: Bearer pw2' https://chat.example",
        "--notify-url=https://hooks.example/pw3",
        "--notify-url",
        "https://hooks.example/pw4",
        "--label",
        "night",
    ]
    stored = mask_argv(argv)
    assert not any(f"pw{i}" in word for word in stored for i in range(1, 5)), stored
    assert stored[:3] == ["solve", "pack", "--database-url=postgresql://u@db/x?password=***"]
    assert stored[3:] == ["--notify", "***", "--notify-url=***", "--notify-url", "***", "--label", "night"]
