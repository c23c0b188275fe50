"""kombu's Redis transport, with a task's slot freed even when its acknowledgement fails.

A worker takes as many tasks as it has pool processes (prefetch) and takes no more until one is
acknowledged. kombu's Redis QoS frees the slot only after the acknowledgement reached Redis: when
Redis is down at that moment (killed, restarted, out of reach), the acknowledgement fails, the slot
stays taken, and once every slot is in that state the worker stops asking Redis for tasks, so it
never notices the lost connection either. It then sits idle forever beside a full queue.

Here the slot is freed whatever became of the acknowledgement, and the error still goes to Celery
(which logs it). A task whose acknowledgement was lost is either gone with the Redis that lost it
or redelivered after the visibility timeout; its attempts were already written, and the database
refuses the repeat (fencing), so freeing the slot loses nothing.
"""

from __future__ import annotations

from kombu.transport import redis


class QoS(redis.QoS):
    """Redis QoS whose ack and reject free the local slot even when Redis cannot be told."""

    def ack(self, delivery_tag: str) -> None:
        try:
            super().ack(delivery_tag)
        finally:
            self._quick_ack(delivery_tag)  # a set's add: nothing twice, whatever super() got to

    def reject(self, delivery_tag: str, requeue: bool = False) -> None:
        try:
            super().reject(delivery_tag, requeue=requeue)
        finally:
            self._quick_ack(delivery_tag)


class Channel(redis.Channel):
    QoS = QoS


class Transport(redis.Transport):
    """The Redis transport (redis:// and rediss://) with packsolve's QoS."""

    Channel = Channel


_PATH = f"{__name__}:Transport"


def install() -> None:
    """Make this the transport of redis:// and rediss:// broker URLs (redis+socket:// too) in this
    process. kombu picks a transport by the URL's scheme through its alias table, so the worker's
    log and every URL shown keep saying redis://; packsolve's processes talk to no other Redis
    broker through kombu."""
    from kombu.transport import TRANSPORT_ALIASES

    TRANSPORT_ALIASES.update(redis=_PATH, rediss=_PATH)
