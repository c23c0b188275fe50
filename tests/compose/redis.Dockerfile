# CI-only stand-in for redis:7-alpine: Debian's redis-server, run with the compose file's arguments.
ARG BASE
FROM ${BASE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends redis-server redis-tools \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data
WORKDIR /data
CMD ["redis-server"]
