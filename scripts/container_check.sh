#!/usr/bin/env bash
# Build the image and run it, where a container engine is available (CI runs this only when
# `docker info` answers; tests/test_container.py covers the files everywhere else).
#
# Checks: compose.yaml is valid for `docker compose`, the image builds, runs as a non-root user,
# answers `dexter --version`, and passes its own HEALTHCHECK command against a Postgres with
# pgvector started beside it. Cleans up what it started.
set -euo pipefail
cd "$(dirname "$0")/.."

tag="dexter:check-$$"
net="dexter-check-$$"
secrets=$(mktemp -d)
cleanup() {
  docker rm -f "$net-db" >/dev/null 2>&1 || true
  docker network rm "$net" >/dev/null 2>&1 || true
  docker image rm "$tag" >/dev/null 2>&1 || true
  rm -rf "$secrets"
}
trap cleanup EXIT

if docker compose version >/dev/null 2>&1; then
  DEXTER_SEC_USER_AGENT="CI Check ci@example.com" docker compose -f compose.yaml config --quiet
fi

docker build --quiet -t "$tag" .
[ "$(docker run --rm --entrypoint id "$tag" -u)" != 0 ] || { echo "the image runs as root" >&2; exit 1; }
docker run --rm "$tag" --version

openssl rand -hex 16 >"$secrets/postgres_password"
chmod 644 "$secrets/postgres_password"
docker network create "$net" >/dev/null
docker run -d --name "$net-db" --network "$net" -e POSTGRES_USER=dexter -e POSTGRES_DB=dexter \
  -e POSTGRES_PASSWORD_FILE=/run/secrets/postgres_password \
  -v "$secrets/postgres_password:/run/secrets/postgres_password:ro" pgvector/pgvector:pg17 >/dev/null
for _ in $(seq 60); do
  docker exec "$net-db" pg_isready -U dexter -d dexter >/dev/null 2>&1 && break
  sleep 1
done
docker run --rm --network "$net" \
  -e DEXTER_DATABASE_URL="postgresql://dexter@$net-db:5432/dexter" \
  -e DEXTER_DATABASE_PASSWORD_FILE=/run/secrets/postgres_password \
  -v "$secrets/postgres_password:/run/secrets/postgres_password:ro" \
  "$tag" doctor --health
echo "container check passed"
