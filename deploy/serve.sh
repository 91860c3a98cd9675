#!/bin/sh
# Production start: apply migrations, then gunicorn with the repository's gunicorn.conf.py.
# Used by `make serve` and by the container's entrypoint (deploy/docker-entrypoint.sh). Needs the
# production environment (README.md, "Production"); DEBUG stays off. MIGRATE_ON_START=false skips the
# migrations, for deployments that run `python manage.py migrate` once as a release step instead
# (several instances starting together would otherwise all migrate at once).
# Arguments are passed to gunicorn (e.g. --bind 0.0.0.0:8000).
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"

case "${MIGRATE_ON_START:-true}" in
    true) "$PYTHON" manage.py migrate --noinput ;;
    false) ;;
    *) echo "MIGRATE_ON_START must be true or false, got '${MIGRATE_ON_START}'" >&2; exit 2 ;;
esac

# The verification pool: with VERIFY_BIND set (e.g. 127.0.0.1:8001, deploy/nginx.conf's provenance_verify),
# a second gunicorn of VERIFY_WORKERS workers (default: the CPU count) serves POST /v1/verify, which nginx
# routes there (docs/decisions.md, "A pool for verification"). A stop of the process group (Ctrl-C, the
# container's end) stops both.
if [ -n "${VERIFY_BIND:-}" ]; then
    GUNICORN_BIND="$VERIFY_BIND" WEB_CONCURRENCY="${VERIFY_WORKERS:-}" \
        "$PYTHON" -m gunicorn config.wsgi:application -c gunicorn.conf.py &
fi

exec "$PYTHON" -m gunicorn config.wsgi:application -c gunicorn.conf.py "$@"
