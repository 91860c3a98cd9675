# The service's image: gunicorn with gunicorn.conf.py on port 8000, as a non-root user; `manage.py migrate`
# runs first (deploy/docker-entrypoint.sh). compose.yaml runs it with PostgreSQL, Redis, the log
# sequencer and nginx in front (README.md, "Deploying with Docker").
#
#   docker build -t provenance-service .                  # the service (the default, last stage)
#   docker build --target proxy -t provenance-proxy .     # nginx with the collected static files

# --- build: the dependencies from pyproject.toml in a virtualenv, and the static files -----------------
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY . .
# Every dependency ships wheels with its native code (numpy, scipy, OpenCV, PyAV, Pillow, lxml,
# psycopg-binary, cryptography, soundfile): no compiler is installed, here or in the final image.
# The project itself runs from /app (templates and manage.py live beside the packages), so its own
# copy in site-packages is removed once its dependencies are in.
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install . \
    && /opt/venv/bin/pip uninstall --yes provenance-service
# collectstatic reads no secret and no database; DEBUG=true only lifts the refusal of missing secrets
# for this one command (nothing of it stays in the image's environment).
RUN DEBUG=true /opt/venv/bin/python manage.py collectstatic --noinput --verbosity 0

# --- proxy: nginx in front of gunicorn, serving the static files itself (deploy/nginx.compose.conf) -----
FROM nginx:1.27-alpine AS proxy
COPY deploy/nginx.compose.conf /etc/nginx/conf.d/default.conf
COPY --from=build /src/staticfiles /srv/provenance/staticfiles

# --- app: the service ----------------------------------------------------------------------------------
FROM python:3.11-slim AS app
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    GUNICORN_BIND=0.0.0.0:8000
RUN useradd --system --uid 10001 --user-group --home-dir /app --no-create-home --shell /usr/sbin/nologin app
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
# Owned by root and read-only to the service's user: the running code cannot change itself.
COPY . /app
COPY --from=build /src/staticfiles /app/staticfiles
# The signer's socket folder: a volume mounted here starts with this owner, so the signer can make its socket.
RUN mkdir -p /run/signer && chown app:app /run/signer && chmod 0770 /run/signer
# The jobs' files (JOB_STORAGE_DIR), shared by web and workers through a volume mounted here.
RUN mkdir -p /srv/job-files && chown app:app /srv/job-files && chmod 0770 /srv/job-files
USER app
EXPOSE 8000
# /healthz answers without the database (core/health.py); /readyz is for orchestrators that route traffic.
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"]
ENTRYPOINT ["/app/deploy/docker-entrypoint.sh"]
CMD ["serve"]
