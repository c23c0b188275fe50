"""The broker URL's TLS settings: what kombu, redis-py and py-amqp are given for rediss:// and amqps://."""

from __future__ import annotations

import ssl

from packsolve.queue.app import make_app
from packsolve.queue.protocol import broker_tls


def test_a_rediss_url_checks_the_certificate_unless_it_says_otherwise():
    assert broker_tls("rediss://:pw@h:6380/0?ssl_ca_certs=/ca.pem") == (
        "rediss://:pw@h:6380/0?ssl_ca_certs=/ca.pem&ssl_cert_reqs=required",
        None,
    )
    assert broker_tls("rediss://h:6380/0") == ("rediss://h:6380/0?ssl_cert_reqs=required", None)
    given = "rediss://h:6380/0?ssl_cert_reqs=none"
    assert broker_tls(given) == (given, None)


def test_an_amqps_url_gives_py_amqp_its_ca_client_certificate_and_host_name_out_of_the_url():
    url, options = broker_tls(
        "amqps://u:p@rabbit:5671/v?heartbeat=10&ssl_ca_certs=/ca.pem&ssl_certfile=/c.pem&ssl_keyfile=/k.pem"
    )
    assert url == "amqps://u:p@rabbit:5671/v?heartbeat=10"
    assert options == {
        "cert_reqs": ssl.CERT_REQUIRED,
        "server_hostname": "rabbit",
        "ca_certs": "/ca.pem",
        "certfile": "/c.pem",
        "keyfile": "/k.pem",
    }
    _, system = broker_tls("amqps://u:p@rabbit:5671/v")
    assert system is not None and system["ca_certs"] == ssl.get_default_verify_paths().cafile
    _, unchecked = broker_tls("amqps://u:p@rabbit:5671/v?ssl_cert_reqs=none")
    assert unchecked == {"cert_reqs": ssl.CERT_NONE}


def test_plain_urls_are_left_as_they_are_and_the_app_carries_the_tls_options():
    for url in ("redis://h:6379/0", "amqp://guest:guest@h:5672//", "unix:///tmp/r.sock"):
        assert broker_tls(url) == (url, None)
    app = make_app("amqps://u:p@rabbit:5671/v?ssl_ca_certs=/ca.pem")
    assert app.conf.broker_use_ssl["ca_certs"] == "/ca.pem"
    assert "ssl_ca_certs" not in app.conf.broker_url
