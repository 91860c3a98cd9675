#!/bin/sh
# The container's entrypoint. `serve` (the image's default command): migrations, then gunicorn
# (deploy/serve.sh). Anything else runs as given, with no migration: `python manage.py log_sequencer`,
# `python manage.py createsuperuser`, a shell.
set -eu
if [ "${1:-serve}" = "serve" ]; then
    [ "$#" -gt 0 ] && shift
    exec "$(dirname "$0")/serve.sh" "$@"
fi
exec "$@"
