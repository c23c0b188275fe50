# packsolve worker/scheduler/CLI image: `docker build -t packsolve .`
# Two stages: the C extensions (src/packsolve/native/*.c) are compiled into a wheel in the
# build stage, so the runtime image carries neither gcc nor the headers.
#
# PYTHON_IMAGE: the base of both stages, any Debian-based image with python3 >= 3.11, pip and apt
# (`docker build --build-arg PYTHON_IMAGE=...`; compose passes $PYTHON_IMAGE). Behind a
# TLS-intercepting proxy, build FROM an image of your own that trusts the proxy's CA (docs/cluster.md).
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY src ./src
# EXTRAS="[cpsat]" adds OR-Tools (the onestroke `cpsat` heuristic); off by default, it is large.
ARG EXTRAS=""
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".${EXTRAS}"

FROM ${PYTHON_IMAGE}
# flower: the monitoring UI of the compose file runs from this same image.
COPY --from=build /wheels /tmp/wheels
RUN pip install --no-cache-dir /tmp/wheels/*.whl "flower>=2.0" \
    && rm -rf /tmp/wheels \
    && useradd --create-home --uid 1000 packsolve
USER packsolve
WORKDIR /home/packsolve
# The compose file's services, without their passwords (compose and `docker run -e` give the URLs
# with them): a container started without its URLs fails to log in, never falls back to SQLite.
ENV PYTHONUNBUFFERED=1 \
    PACKSOLVE_BROKER_URL=redis://redis:6379/0 \
    PACKSOLVE_DATABASE_URL=postgresql://packsolve@postgres:5432/packsolve
# Fail at build time, not on the first task, if an extension did not compile.
RUN python -c "import importlib, pkgutil, packsolve.native as n; \
[importlib.import_module('packsolve.native.' + m.name) for m in pkgutil.iter_modules(n.__path__)]"
ENTRYPOINT ["packsolve"]
CMD ["--help"]
