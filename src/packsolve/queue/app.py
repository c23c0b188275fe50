"""The cluster: a deployment's settings and the Celery app made of them, for senders and workers alike.

A Cluster is what every sender holds (submit, rerun, resume, the scheduler): its settings (queue,
visibility timeout, task key, waits) and its Celery app, with what is asked of the broker: send
attempts, count the tasks waiting, check that it answers, and (Redis) read and clear the
unacknowledged tasks. Nothing below digs the settings out of the app's configuration.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from celery import Celery
from sqlalchemy import Engine

from packsolve import settings as settings_module
from packsolve.db.session import session_scope
from packsolve.db.workers import signing_hosts
from packsolve.errors import BrokerError, UsageError
from packsolve.execution import Limits
from packsolve.masking import mask_url
from packsolve.queue import brokerscan, protocol, redis_transport
from packsolve.queue.brokerscan import BrokerUnreadable, Unacked
from packsolve.queue.protocol import PendingAttempt, broker_tls
from packsolve.settings import Settings, parsed


def make_app(broker: str | None = None, settings: Settings | None = None) -> Celery:
    """Return a Celery app with packsolve's settings (see DESIGN: why each one); no task registered.

    Senders use it through a Cluster (send_task by name); `packsolve worker` registers the task
    on it. Without settings, the environment's and ./packsolve.toml's (settings.current());
    broker, if given, overrides their broker URL (SettingsError if it is not one).
    """
    settings = settings or settings_module.current()
    url, tls = broker_tls(parsed("broker_url", broker) if broker else settings.broker_url)
    # Redis: kombu's transport, but a task's slot is freed even when its ack fails (a restarted
    # Redis would otherwise leave a worker idle beside a full queue: see redis_transport).
    redis_transport.install()
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
    )
    return app


@dataclass(frozen=True)
class Cluster:
    """A deployment's broker side: its settings and its Celery app (made of them; it connects only
    when asked something)."""

    settings: Settings
    app: Celery

    @classmethod
    def of(cls, settings: Settings | None = None, broker: str | None = None) -> Cluster:
        """Return the cluster of these settings (None: the environment's and ./packsolve.toml's);
        broker, if given, overrides their broker URL (SettingsError if it is not one)."""
        settings = settings or settings_module.current()
        if broker:
            settings = replace(settings, broker_url=parsed("broker_url", broker))
        return cls(settings, make_app(settings=settings))

    @property
    def queue(self) -> str:
        return self.settings.queue

    @property
    def visibility_timeout(self) -> int:
        """Seconds before Redis redelivers an unacknowledged task: bounds a task's length."""
        return self.settings.visibility_timeout

    @property
    def task_key(self) -> bytes | None:
        """The key tasks sent are signed with (PACKSOLVE_TASK_KEY), or None: unsigned."""
        return protocol.task_keys(self.settings).current

    @property
    def shown_broker(self) -> str:
        """The broker's URL as it may be shown and recorded (its password hidden)."""
        return mask_url(self.app.conf.broker_url)

    def check_reachable(self) -> None:
        """Connect to the broker once; raise BrokerError naming it if it cannot be reached."""
        try:
            with self.app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=2, interval_start=0.2, interval_step=0.5)
        except Exception as exc:
            raise BrokerError(f"cannot reach the broker at {self.shown_broker}: {exc}") from None

    def send(
        self,
        run_id: int,
        pending: Sequence[PendingAttempt],
        max_tries: int,
        chunk_size: int = 1,
        deployment: str | None = None,
        alone: Collection[tuple[str, str]] = (),
    ) -> int:
        """Send the attempts as tasks of chunk_size (those in alone: of one) over one connection; return
        tasks sent.

        deployment is the id of the database the run lives in: a worker of another database refuses
        the tasks instead of running them against the wrong one. Each task is signed with the task
        key when there is one, and gets a Celery hard limit with room for two of the workers'
        database waits (db_patience).

        A task carries attempts of one kind and heuristic (chunks_of): a worker that cannot serve one
        (a kind or a program it lacks) refuses only those.

        Messages are pipelined to Redis in batches (kombu's Producer.batch: one round
        trip per thousand tasks), so enqueueing 50,000 levels takes seconds.
        """
        if chunk_size < 1:
            raise ValueError("chunk size must be at least 1")
        app, key, patience = self.app, self.task_key, self.settings.db_patience
        sent = 0
        kinds: dict[tuple[str, str], bool] = {}
        with app.producer_or_acquire() as producer:
            # Declared once here instead of once per message (declare=[] below).
            producer.maybe_declare(app.amqp.queues[self.queue])
            with producer.batch(max_size=1000):
                for chunk in chunks_of(pending, chunk_size, alone):
                    prepares = _may_prepare(chunk, kinds)
                    soft, hard = protocol.celery_limits(
                        Limits.widest(p.spec.limits for p in chunk), len(chunk), patience, prepares
                    )
                    first = chunk[0].name or chunk[0].level_hash[:12]
                    app.send_task(
                        protocol.TASK_NAME,
                        args=[protocol.encode(run_id, chunk, max_tries, deployment, key)],
                        soft_time_limit=soft,
                        time_limit=hard,
                        producer=producer,
                        declare=[],
                        # Celery would repr the whole payload for logs and Flower; this says as much.
                        argsrepr=f"run {run_id}: {len(chunk)} level(s) from {first}",
                        kwargsrepr="{}",
                    )
                    sent += 1
        return sent

    def call_helpers(
        self, run_id: int, item: PendingAttempt, count: int, max_tries: int, deployment: str | None
    ) -> None:
        """Send count calls for help with the parts of a split level (its attempt, led by the caller):
        each a task any worker process may take, that takes and runs the level's parts while there are
        any (queue.splits). Signed with the task key as every task."""
        _, hard = protocol.celery_limits(item.spec.limits, 1, self.settings.db_patience, False)
        body = protocol.encode(run_id, [item], max_tries, deployment, self.task_key, helps=True)
        name = item.name or item.level_hash[:12]
        with self.app.producer_or_acquire() as producer:
            for _ in range(count):
                self.app.send_task(
                    protocol.TASK_NAME,
                    args=[body],
                    time_limit=hard,
                    producer=producer,
                    argsrepr=f"run {run_id}: help with the parts of {name}",
                    kwargsrepr="{}",
                )

    def depth(self) -> int:
        """Return how many tasks wait in the queue (see depth_of)."""
        return self.depth_of(self.queue)

    def depth_of(self, queue: str) -> int:
        """Return how many tasks wait in that queue of this broker (0 if it has no such queue yet).

        One passive queue declaration, the same for Redis and RabbitMQ, as cheap with ten tasks
        queued as with a million. Raise BrokerUnreadable if the broker cannot be asked.
        """
        from amqp.exceptions import NotFound
        from kombu.exceptions import ChannelError

        try:
            with self.app.connection_for_read() as conn:
                conn.ensure_connection(max_retries=2, interval_start=0.2, interval_step=0.5)
                channel = conn.channel()
                try:
                    return int(channel.queue_declare(queue=queue, passive=True).message_count)
                except (NotFound, ChannelError):
                    return 0  # never declared, or Redis keeps no key for an empty queue
                finally:
                    # A channel the broker closed on NotFound is gone already.
                    with contextlib.suppress(Exception):
                        channel.close()
        except BrokerError:
            raise
        except Exception as exc:
            raise BrokerUnreadable(f"cannot ask the broker how many tasks wait: {exc}") from exc

    def unacked(self) -> list[Unacked]:
        """Return our queue's tasks in a Redis broker's unacknowledged set (see brokerscan)."""
        return brokerscan.unacked_messages(self.settings.broker_url, self.queue)

    def forget_unacked(self, tags: list[str]) -> int:
        """Delete these unacknowledged tasks from a Redis broker (never redelivered); return how many."""
        return brokerscan.forget_unacked(self.settings.broker_url, tags)

    def unsigned_problem(self, engine: Engine) -> str | None:
        """Return why every task sent from here would be refused (no task key here, and the live
        workers of engine's database run only signed tasks), or None."""
        if self.task_key is not None:
            return None
        with session_scope(engine) as session:
            hosts = signing_hosts(session)
        if not hosts:
            return None
        shown = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more" if len(hosts) > 3 else "")
        return (
            f"no PACKSOLVE_TASK_KEY here, but this deployment's workers ({shown}) run only signed tasks: "
            "every task sent from here would be refused; set PACKSOLVE_TASK_KEY to the workers' key"
        )

    def check_signing(self, engine: Engine) -> None:
        """Raise UsageError (see unsigned_problem) if every task sent from here would be refused."""
        problem = self.unsigned_problem(engine)
        if problem is not None:
            raise UsageError(problem)


def chunks_of(
    pending: Sequence[PendingAttempt], size: int, alone: Collection[tuple[str, str]] = ()
) -> list[list[PendingAttempt]]:
    """Return the attempts in tasks of at most size, each of one kind and heuristic, in the order given;
    an attempt whose key is in alone (expected long: planning.Ordered) in a task of its own.

    A task is refused whole by a worker that lacks its kind or its heuristic's program, and such
    refusals by every worker give up its attempts: an attempt must not share a task with another
    heuristic's (of a run of several side by side) or another kind's, which some worker may serve.
    Each task holds consecutive attempts of its own (kind, heuristic) and goes where its first one was.
    """
    chunks: list[list[PendingAttempt]] = []
    filling: dict[tuple[str, str], list[PendingAttempt]] = {}
    for p in pending:
        if p.key in alone:
            chunks.append([p])
            continue
        key = (p.spec.kind, p.spec.heuristic)
        chunk = filling.get(key)
        if chunk is None or len(chunk) >= size:
            chunk = filling[key] = []
            chunks.append(chunk)
        chunk.append(p)
    return chunks


def _may_prepare(chunk: Sequence[PendingAttempt], known: dict[tuple[str, str], bool]) -> bool:
    """Return whether a worker may have to prepare what the chunk's heuristics need (known: per (kind,
    heuristic), judged on its first level met, so that a big submit parses few levels)."""
    from packsolve.execution.preparing import preparation_of

    for item in chunk:
        pair = (item.spec.kind, item.spec.heuristic)
        if pair not in known:
            known[pair] = preparation_of(item.spec) is not None
        if known[pair]:
            return True
    return False
