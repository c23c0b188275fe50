"""/metrics: the deployment's Prometheus metrics (packsolve.metrics.collector), on the dashboard or alone.

`packsolve serve` answers it beside its pages, `packsolve metrics` alone (metrics_app). Either way
the dashboard's access rule holds (web.app's gate): loopback without a token, else every request
carries the token, as the x-packsolve-token header or `Authorization: Bearer TOKEN` (what
Prometheus sends with its scrape config's `authorization` / `bearer_token_file`).
"""

from __future__ import annotations

import logging

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from packsolve.metrics.collector import registry_of
from packsolve.queue.app import Cluster

log = logging.getLogger("packsolve.web")


def metrics_registry(engine: Engine, cluster: Cluster | None) -> CollectorRegistry:
    """Return the registry /metrics renders (kept on app.state.metrics)."""
    return registry_of(engine, cluster)


def metrics(request: Request) -> Response:
    """Render the metrics in the Prometheus text format; 503 in one line if the database cannot be read.

    A plain function: Starlette runs it in its thread pool, so the scrape's reads never block the loop.
    """
    registry: CollectorRegistry = request.app.state.metrics
    try:
        body = generate_latest(registry)
    except SQLAlchemyError as exc:
        first = next((line for line in str(getattr(exc, "orig", exc)).splitlines() if line.strip()), "")
        log.warning("/metrics: the database is not answering: %s", first)
        return PlainTextResponse(f"the database is not answering ({first.strip()})\n", status_code=503)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
