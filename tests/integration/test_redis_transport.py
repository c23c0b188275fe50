"""packsolve's Redis transport on a real redis-server: a failed ack still frees the task's slot."""

from __future__ import annotations

import pytest
import redis
from kombu import Connection, Exchange, Queue

from packsolve.queue import redis_transport
from packsolve.queue.app import make_app
from tests.support.services import private_redis

pytestmark = pytest.mark.redis


def test_the_app_takes_redis_urls_through_packsolve_transport():
    app = make_app("redis://127.0.0.1:1/0")
    with app.connection_for_read() as conn:
        assert conn.transport_cls == "redis"  # the URL as users wrote it, shown as such
        assert conn.get_transport_cls() is redis_transport.Transport
        assert conn.as_uri().startswith("redis://")


@pytest.mark.parametrize("settle", ["ack", "reject"])
def test_a_message_settled_while_redis_is_down_frees_its_slot(settle):
    """One slot (prefetch 1) taken; Redis dies; the ack (or reject) fails and says so, and the
    channel may consume again, so the worker's next poll finds the lost connection and reconnects."""
    redis_transport.install()
    queue = Queue("t", Exchange("t"), "t")
    with private_redis() as (url, restart):
        with Connection(url) as conn:
            for i in range(2):
                conn.Producer().publish({"i": i}, exchange=queue.exchange, routing_key="t", declare=[queue])
        conn = Connection(url)
        try:
            channel = conn.channel()
            assert isinstance(channel.qos, redis_transport.QoS)
            channel.basic_qos(0, 1, False)
            got: list = []
            conn.Consumer(
                queue, channel=channel, callbacks=[lambda _body, message: got.append(message)]
            ).consume()
            conn.drain_events(timeout=5)
            assert len(got) == 1 and not channel.qos.can_consume()

            def settle_while_down() -> None:
                with pytest.raises(redis.ConnectionError):
                    got[0].ack() if settle == "ack" else got[0].reject(requeue=False)
                assert channel.qos.can_consume()

            restart(during=settle_while_down)
        finally:
            conn.release()
