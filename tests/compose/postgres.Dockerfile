# CI-only stand-in for postgres:16-alpine: Debian's PostgreSQL 15 behind an entrypoint that reads the
# official image's POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB on first start.
ARG BASE
FROM ${BASE}
RUN mkdir -p /etc/postgresql-common \
    && echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf \
    && apt-get update \
    && apt-get install -y --no-install-recommends postgresql-15 \
    && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]
# As the official image: `docker stop` asks for a fast shutdown (clients cut at once), not a smart one.
STOPSIGNAL SIGINT
CMD ["postgres"]
