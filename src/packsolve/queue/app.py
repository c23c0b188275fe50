"""The Celery app with packsolve's settings, for senders and workers alike."""

from __future__ import annotations

from celery import Celery

from packsolve import settings as settings_module
from packsolve.queue.protocol import broker_tls
from packsolve.settings import Settings, parsed


def make_app(broker: str | None = None, settings: Settings | None = None) -> Celery:
    """Return a Celery app with packsolve's settings (see DESIGN: why each one); no task registered.

    settings: the resolved settings, which the app's configuration carries to a worker's
    pool processes and to whatever sends with it (conf.packsolve_settings). Senders use
    the app as it is (send_task by name); `packsolve worker` registers the task on it.

    For a library user or a test that has no Settings: without settings, the
    environment's and ./packsolve.toml's (settings.current()); broker, if given,
    overrides their broker URL (SettingsError if it is not one).
    """
    settings = settings or settings_module.current()
    url, tls = broker_tls(parsed("broker_url", broker) if broker else settings.broker_url)
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
        task_default_queue=settings.queue,
        broker_transport_options={"visibility_timeout": settings.visibility_timeout},
        broker_connection_retry_on_startup=True,
        worker_send_task_events=False,
        # Remote control (inspect, revoke with terminate, shutdown, pool resizing) obeys anyone who can
        # write to the broker, key or not: off unless PACKSOLVE_WORKER_REMOTE_CONTROL says the broker
        # is trusted. Flower then lists no workers and can neither revoke nor stop anything.
        worker_enable_remote_control=settings.worker_remote_control,
        packsolve_settings=settings,
    )
    return app
