# packsolve worker/scheduler/CLI image: `docker build -t packsolve .`
# Two stages: the C extensions (src/packsolve/native/*.c) are compiled into a wheel in the
# build stage, so the runtime image carries neither gcc nor the headers.

FROM python:3.11-slim AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY src ./src
# EXTRAS="[cpsat]" adds OR-Tools (the onestroke `cpsat` heuristic); off by default, it is large.
ARG EXTRAS=""
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".${EXTRAS}"

FROM python:3.11-slim
# flower: the monitoring UI of the compose file runs from this same image.
COPY --from=build /wheels /tmp/wheels
RUN pip install --no-cache-dir /tmp/wheels/*.whl "flower>=2.0" \
    && rm -rf /tmp/wheels \
    && useradd --create-home --uid 1000 packsolve
USER packsolve
WORKDIR /home/packsolve
ENV PYTHONUNBUFFERED=1 \
    PACKSOLVE_BROKER_URL=redis://redis:6379/0 \
    PACKSOLVE_DATABASE_URL=postgresql://packsolve:packsolve@postgres:5432/packsolve
# Fail at build time, not on the first task, if an extension did not compile.
RUN python -c "import importlib, pkgutil, packsolve.native as n; \
[importlib.import_module('packsolve.native.' + m.name) for m in pkgutil.iter_modules(n.__path__)]"
ENTRYPOINT ["packsolve"]
CMD ["--help"]
