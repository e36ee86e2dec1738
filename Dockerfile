# syntax=docker/dockerfile:1
#
# Dexter for Python: one image for every team-mode process (workers, gateway, scheduler,
# migrations). Configuration by environment, secrets by file (`*_FILE`, see README "Team mode").
#
#   docker build -t dexter .
#   docker build --build-arg DEXTER_EXTRAS="team web reports slack" -t dexter .
#
# Python 3.11: the version the test suite runs on.
ARG PYTHON_VERSION=3.11

# ---- build: resolve from uv.lock into a virtual environment; no compilers reach the runtime ----
FROM python:${PYTHON_VERSION}-slim-bookworm AS build
COPY --from=ghcr.io/astral-sh/uv:0.13.9 /uv /usr/local/bin/uv
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/opt/dexter
# Optional parts installed beside the core (pyproject.toml's extras): `team` is Postgres,
# `web` the browser app, `reports` PDF/XLSX/charts, `slack` the Slack channel of the gateway.
ARG DEXTER_EXTRAS="team web reports slack"
WORKDIR /src
# Dependencies first, in their own layer: a change to the code does not reinstall them.
COPY pyproject.toml uv.lock ./
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-install-project \
        $(for extra in $DEXTER_EXTRAS; do printf -- '--extra %s ' "$extra"; done)
COPY README.md LICENSE ./
COPY src ./src
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-editable \
        $(for extra in $DEXTER_EXTRAS; do printf -- '--extra %s ' "$extra"; done)

# ---- runtime: the environment and the libraries it loads, run as an unprivileged user ----
FROM python:${PYTHON_VERSION}-slim-bookworm AS runtime
# Pango: WeasyPrint's PDF reports. tini: signals reach Dexter (Ctrl+C / `docker stop` stop a
# worker within its grace period) and zombies are reaped.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libpango-1.0-0 libpangoft2-1.0-0 tini \
    && rm -rf /var/lib/apt/lists/*
# A fixed numeric id: Kubernetes' runAsNonRoot checks it, and volume permissions match it.
RUN groupadd --system --gid 10001 dexter \
    && useradd --system --uid 10001 --gid dexter --home-dir /home/dexter --create-home dexter \
    && mkdir -p /var/lib/dexter \
    && chown dexter:dexter /var/lib/dexter
COPY --from=build /opt/dexter /opt/dexter
ENV PATH=/opt/dexter/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DEXTER_HOME=/var/lib/dexter
# Memory files, the SEC disk cache and gateway.json live here; one volume shared by every
# container on a host lets them share the cache (README: "The SEC limit across machines").
VOLUME ["/var/lib/dexter"]
WORKDIR /home/dexter
USER 10001:10001
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 \
    CMD ["dexter", "doctor", "--health"]
ENTRYPOINT ["/usr/bin/tini", "--", "dexter"]
CMD ["--help"]
