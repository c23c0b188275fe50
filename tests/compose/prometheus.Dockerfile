# CI-only stand-in for prom/prometheus: Debian's prometheus, run with the compose file's arguments
# (the official image's entrypoint is the prometheus binary too). Never part of the product.
ARG BASE
FROM ${BASE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends prometheus \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /prometheus && chown nobody:nogroup /prometheus
USER nobody
ENTRYPOINT ["/usr/bin/prometheus"]
