"""The Celery app with packsolve's settings, for senders and workers alike."""

from __future__ import annotations

from celery import Celery

from packsolve.queue.protocol import broker_tls, broker_url, queue_name, visibility_timeout


def make_app(broker: str | None = None) -> Celery:
    """Return a Celery app with packsolve's settings (see DESIGN: why each one); no task registered.

    Senders use it as it is (send_task by name); `packsolve worker` registers the task on it.
    """
    url, tls = broker_tls(broker_url(broker))
    app = Celery("packsolve", broker=url)
    app.conf.update(
        # rediss:// and amqps://: the certificate is checked (see broker_tls for the URL's settings).
        broker_use_ssl=tls,
        # JSON only: pickle would execute code from anyone who can write to the queue.
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        # The database is the result store.
        task_ignore_result=True,
        result_backend=None,
        # Long tasks: ack after the work, take one at a time, and requeue if the child dies.
        task_acks_late=True,
        worker_prefetch_multiplier=1,
        task_reject_on_worker_lost=True,
        task_default_queue=queue_name(),
        broker_transport_options={"visibility_timeout": visibility_timeout()},
        broker_connection_retry_on_startup=True,
        worker_send_task_events=False,
    )
    return app
