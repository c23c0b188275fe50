"""The task format that submit, the scheduler and the worker share.

One place for what travels on the queue: the task name, the payload (encoded by
the sender, decoded by the worker and by the scheduler's look into the broker),
its signature with the cluster's task keys, and the Celery time limits that go
with it. The queue name, the keys and the visibility timeout every side must
agree on are settings (packsolve.settings), handed in by the caller. No Celery
import: reading a message must not need a Celery app.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from packsolve import bounds
from packsolve.attempt import DEFAULT_MAX_TRIES
from packsolve.execution import AttemptSpec, Limits
from packsolve.execution.spec import PendingAttempt
from packsolve.levels import canonical_json
from packsolve.settings import DEFAULT_DB_PATIENCE_S, Settings

TASK_NAME = "packsolve.attempt"
# Celery's hard limit sits above our hard kill of the solver child, so it only fires if that fails
# (a pool process stuck outside any solver). It also leaves room for the worker's two waits on the
# database (its claim and its result write, each retried for up to the db_patience setting): waiting
# for the database is not solving. Celery's soft limit is not used: raised inside a database retry
# or a result write, it cut them short and lost finished results.
CELERY_HARD_MARGIN_S = 60
# And, for a task whose heuristic needs work once per machine (execution.preparing: pattern tables, which
# for sliding pdb-6666 take minutes), room for the worker's pool process to do it before the attempts.
PREPARE_MARGIN_S = 1800


@dataclass(frozen=True)
class TaskKeys:
    """The cluster's task keys: current signs what is sent; it and every old one are accepted."""

    current: bytes | None = None
    old: tuple[bytes, ...] = ()

    @property
    def accepted(self) -> tuple[bytes, ...]:
        """Return every key a signature may be made with (none: tasks are not checked)."""
        return (*((self.current,) if self.current else ()), *self.old)


def task_keys(settings: Settings) -> TaskKeys:
    """Return the task keys of the settings: PACKSOLVE_TASK_KEY signs, and it and every key of
    PACKSOLVE_TASK_KEYS_OLD (comma-separated) are accepted (docs/security.md: rotating)."""
    current = settings.task_key
    return TaskKeys(current.encode() if current else None, tuple(k.encode() for k in settings.task_keys_old))


def broker_tls(url: str) -> tuple[str, dict[str, Any] | None]:
    """Return the broker URL to connect with and Celery's broker_use_ssl for it (None: none needed).

    TLS settings travel in the URL's query, by kombu's names: ssl_ca_certs (the CA bundle the
    server's certificate must chain to; default: the system's), ssl_certfile and ssl_keyfile (a
    client certificate), ssl_cert_reqs (required, the default; none turns checking off).
    rediss:// keeps them in the URL, which kombu and redis-py read, with ssl_cert_reqs=required
    added when absent (kombu would not check the certificate). amqps:// takes them out (kombu
    would hand them on to py-amqp under names it does not know) and returns them as py-amqp's
    options, the host name checked too.
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    given = dict(query)
    if parts.scheme == "rediss":
        if "ssl_cert_reqs" not in given:
            url = urlunsplit(
                parts._replace(query="&".join(filter(None, [parts.query, "ssl_cert_reqs=required"])))
            )
        return url, None
    if parts.scheme != "amqps":
        return url, None
    checked = given.get("ssl_cert_reqs", "required").lower() not in ("none", "cert_none")
    options: dict[str, Any] = {"cert_reqs": ssl.CERT_REQUIRED if checked else ssl.CERT_NONE}
    if checked:
        options["server_hostname"] = parts.hostname
        options["ca_certs"] = given.get("ssl_ca_certs") or ssl.get_default_verify_paths().cafile
    for name in ("certfile", "keyfile"):
        if given.get(f"ssl_{name}"):
            options[name] = given[f"ssl_{name}"]
    rest = [(k, v) for k, v in query if not k.startswith("ssl_")]
    return urlunsplit(parts._replace(query=urlencode(rest))), options


def celery_limits(
    limits: Limits, attempts: int = 1, db_patience_s: float = DEFAULT_DB_PATIENCE_S, prepares: bool = False
) -> tuple[float | None, float | None]:
    """Return Celery's (soft, hard) time limits for a task of this many attempts under limits, on
    workers that wait db_patience_s for their database (and, if prepares, may first prepare what
    its heuristic needs once: PREPARE_MARGIN_S).

    soft is always None (see CELERY_HARD_MARGIN_S); hard is None without a time limit.
    """
    hard = limits.hard_time()
    if hard is None:
        return None, None
    margin = CELERY_HARD_MARGIN_S + (PREPARE_MARGIN_S if prepares else 0)
    return None, hard * attempts + margin + 2 * db_patience_s


@dataclass(frozen=True)
class Task:
    """One task's payload: attempts of one run, run one after the other."""

    run_id: int
    max_tries: int
    items: tuple[PendingAttempt, ...]
    deployment: str | None = None  # the id of the database that sent it (None: an older sender)
    # A call for help with a split level (its one attempt, claimed and led by another worker process):
    # take and run its parts while there are any (queue.splits), never the level whole.
    helps: bool = False


def encode(
    run_id: int,
    items: Sequence[PendingAttempt],
    max_tries: int,
    deployment: str | None = None,
    key: bytes | None = None,
    helps: bool = False,
) -> dict[str, Any]:
    """Return the JSON message body of a task carrying one or more attempts of a run of a deployment.

    With a key the body is signed (SIGNATURE: HMAC-SHA256 of the rest's canonical JSON). helps: a call
    for help with the parts of one split level (Task.helps), signed as any task.
    """
    body: dict[str, Any] = {
        "run": run_id,
        "max_tries": max_tries,
        # The wire format of every release so far: the level hash and the spec, no name.
        "items": [{"level": item.level_hash, "spec": item.spec.to_json()} for item in items],
    }
    if deployment is not None:
        body["deployment"] = deployment
    if helps:  # only when set: every other task is as earlier versions wrote it
        body["helps"] = True
    if key is not None:
        body[SIGNATURE] = _signature(body, key)
    return body


SIGNATURE = "signature"


def _signature(body: dict[str, Any], key: bytes) -> str:
    """Return the HMAC-SHA256 (hex) of the body's canonical JSON, its signature field left out."""
    unsigned = {k: v for k, v in body.items() if k != SIGNATURE}
    return hmac.new(key, canonical_json(unsigned).encode(), hashlib.sha256).hexdigest()


def signature_problem(payload: Any, keys: TaskKeys) -> str | None:
    """Return why the payload is not signed by one of keys (unsigned, or signed otherwise); None if it is.

    Without any key nothing is checked (None): such a cluster says so at every worker's start.
    """
    accepted = keys.accepted
    if not accepted:
        return None
    given = payload.get(SIGNATURE) if isinstance(payload, dict) else None
    run = payload.get("run") if isinstance(payload, dict) else None
    if not isinstance(given, str):
        return (
            f"an unsigned task (run {run!r}): this cluster signs its tasks with PACKSOLVE_TASK_KEY; "
            "send tasks with `packsolve submit` under the same key"
        )
    try:
        valid = any(hmac.compare_digest(given, _signature(payload, key)) for key in accepted)
    except (TypeError, ValueError):  # not JSON-able, or a signature that is not ASCII
        valid = False
    if not valid:
        return (
            f"a task whose signature matches none of this worker's keys (run {run!r}): altered after "
            "it was signed, or signed with another key (set the same PACKSOLVE_TASK_KEY everywhere; "
            "PACKSOLVE_TASK_KEYS_OLD keeps old keys accepted while you rotate)"
        )
    return None


def decode(payload: Any) -> Task:
    """Return the Task of a message body; raise ValueError if it is not one of ours.

    Every number in it must lie in what the database stores (bounds): the message says the range.
    """
    try:
        items = tuple(
            PendingAttempt(str(item["level"]), AttemptSpec.from_json(_bounded(item["spec"])))
            for item in payload["items"]
        )
        deployment = payload.get("deployment")
        max_tries = _number(payload, "max_tries", bounds.MAX_TRIES, DEFAULT_MAX_TRIES)
        run_id = _number(payload, "run", bounds.RUN_ID)
        helps = payload.get("helps", False)
        if not isinstance(helps, bool) or (helps and len(items) != 1):
            raise ValueError(f"not a packsolve task: helps {helps!r} is not true of one attempt, or false")
        return Task(run_id, max_tries, items, None if deployment is None else str(deployment), helps)
    except (TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"not a packsolve task: {type(exc).__name__}: {exc}") from None


_LIMIT_RANGES = (
    ("time_limit", bounds.TIME_LIMIT_S),
    ("cpu_limit", bounds.TIME_LIMIT_S),
    ("node_limit", bounds.NODE_LIMIT),
    ("memory_limit_mb", bounds.MEMORY_LIMIT_MB),
)


_PART_RANGES = (("index", bounds.PART_INDEX), ("of", bounds.PARTS), ("count", bounds.PARTS))


def _bounded(spec: Any) -> Any:
    """Return spec if its limits are None or within their ranges, and its part (if any) well formed;
    raise ValueError naming a field that is not."""
    for name, span in _LIMIT_RANGES:
        if spec.get(name) is not None:
            _number(spec, name, span)
    part = spec.get("part")
    if part is not None:
        _bounded_part(part)
    return spec


def _bounded_part(part: Any) -> None:
    """Raise ValueError unless part is a part of a split level as PartSpec.to_json writes one."""
    if not isinstance(part, dict):
        raise ValueError(f"not a packsolve task: part {part!r} is not an object")
    for name, span in _PART_RANGES:
        _number(part, name, span)
    window = part.get("window")
    if window is not None:
        if not isinstance(window, list) or len(window) != 2:
            raise ValueError(f"not a packsolve task: part window {window!r} is not [low, high]")
        for value in window:
            if not bounds.SEARCH_BOUND.holds(value):
                raise ValueError(
                    f"not a packsolve task: part window {window!r} holds {value!r}, "
                    f"not a number from {bounds.SEARCH_BOUND}"
                )
        if window[0] > window[1]:
            raise ValueError(f"not a packsolve task: part window {window!r} has its low above its high")
    if part.get("best") is not None:
        _number(part, "best", bounds.SEARCH_BOUND)


def _number(fields: Any, name: str, span: bounds.Range, default: Any = None) -> Any:
    """Return fields[name] (default if absent and given) if a number within span; raise ValueError if not."""
    value = fields[name] if default is None else fields.get(name, default)
    if not span.holds(value):
        raise ValueError(f"not a packsolve task: {name} {value!r} is not a number from {span}")
    return value


def decode_message(raw: Any) -> Task | None:
    """Return the Task inside a raw Kombu message as the broker stores it; None if it is not ours.

    Only JSON messages of our task name count: a pickle someone slipped into
    the queue is never decoded.
    """
    try:
        message = json.loads(raw) if isinstance(raw, (str, bytes)) else raw
        if message.get("content-type") != "application/json":
            return None
        if (message.get("headers") or {}).get("task") != TASK_NAME:
            return None
        body = message["body"]
        if (message.get("properties") or {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        return decode(json.loads(body)[0][0])
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
        return None  # RecursionError: JSON nested too deep to parse
