# CI-only stand-in for python:3.11-slim, built on the local Debian base (no registry is reachable).
# Debian's python3 with pip allowed to install system-wide, as in the official image, and the
# host's CA bundle trusted so pip works behind a TLS-intercepting proxy. Never part of the product.
ARG BASE
FROM ${BASE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-dev python3-pip python-is-python3 \
    && rm -rf /var/lib/apt/lists/* /usr/lib/python3*/EXTERNALLY-MANAGED
COPY host-ca.crt /etc/ssl/certs/packsolve-ci-host-ca.crt
ENV PIP_CERT=/etc/ssl/certs/packsolve-ci-host-ca.crt \
    SSL_CERT_FILE=/etc/ssl/certs/packsolve-ci-host-ca.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/packsolve-ci-host-ca.crt \
    PIP_DISABLE_PIP_VERSION_CHECK=1
