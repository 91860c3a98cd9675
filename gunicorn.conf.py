"""gunicorn in production: `make serve` (deploy/serve.sh: migrations, then
`gunicorn config.wsgi:application -c gunicorn.conf.py`).

Behind a buffering reverse proxy (deploy/nginx.conf), and safe from slow clients without it: stock
gunicorn has no timeout for reading a request's head or body (a sync worker is stuck until `timeout`
kills it, a gthread thread until the client leaves), so the worker class reads each request whole in
its event loop, under HEADER_READ_TIMEOUT, BODY_READ_TIMEOUT and BODY_READ_DEADLINE, before a thread
sees it (core/gunicorn_worker.py). Why these values: docs/decisions.md, "Slow clients".
"""

import os

# Environment: GUNICORN_BIND (the proxy reaches the app here), WEB_CONCURRENCY (gunicorn's own name),
# FORWARDED_ALLOW_IPS (read by gunicorn itself: the proxy's address, default 127.0.0.1).
bind = [os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")]
workers = int(os.environ.get("WEB_CONCURRENCY") or len(os.sched_getaffinity(0)))  # nproc

# gthread keeps the proxy's upstream connections alive in a poller without holding the thread, and this
# subclass reads requests there until they are whole; one thread a worker because more threads contend
# for the GIL and were slower (docs/performance.md, "Figures behind code comments").
worker_class = "core.gunicorn_worker.WholeRequestWorker"  # gthread, balanced, whole requests only
threads = 1
# Its deadlines come from the environment: HEADER_READ_TIMEOUT (10 s for a whole head) and the app's
# BODY_READ_TIMEOUT and BODY_READ_DEADLINE (10 s without a byte, 60 s for a whole body).

# Kill a worker whose main loop is silent this long (under gthread a busy thread does not count).
timeout = 30
# On reload or stop, requests in progress get this long to finish.
graceful_timeout = 30
# Idle upstream connections: longer than nginx's upstream keepalive_timeout (60 s), so nginx is the
# side that closes and never reuses a connection gunicorn is closing.
keepalive = 75

# Request size. The head: gunicorn's largest request line (8190 bytes; 0 would mean no limit at all),
# its default field limits; nginx's large_client_header_buffers and the app
# (core/middleware.py RequestHeadLimitMiddleware) match them, and gunicorn's own refusals are JSON
# envelopes too (core/errors.py install_server_refusals).
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
# The body: gunicorn has no size setting. nginx refuses bodies over each route's limit with 413 before
# they reach gunicorn (client_max_body_size: 1 MB JSON, 10 MB records batch, 36 MB verify batch,
# 51 MB uploads), and the app enforces the same limits itself while reading (413 payload_too_large).

# Logs: one JSON object per line on stdout, the same shape as the app's (core/logs.py), from the
# master and the workers. No gunicorn access log: the app writes one line per request itself
# (core/middleware.py RequestContextMiddleware), with its request id, organization and duration, and
# with secret URL arguments and query strings left out, which gunicorn's format cannot do.
accesslog = None
loglevel = os.environ.get("LOG_LEVEL", "info").lower()
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_context": {"()": "core.logs.RequestContextFilter"}},
    "formatters": {"json": {"()": "core.logs.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "stream": "ext://sys.stdout",
                             "formatter": "json", "filters": ["request_context"]},
                 "discard": {"class": "logging.NullHandler"}},
    "root": {"level": "INFO", "handlers": ["console"]},
    # gunicorn.error through the root handler, at the level `loglevel` gave it; gunicorn.access nowhere
    # (a logging config turns gunicorn's access log on whatever `accesslog` says).
    "loggers": {"gunicorn.error": {"handlers": [], "propagate": True},
                "gunicorn.access": {"handlers": ["discard"], "propagate": False}},
}


# gunicorn 24+ opens a control socket in the home directory for `gunicornc`; nothing here uses it.
control_socket_disable = True


def post_request(worker, req, environ, resp):
    # A large request (a 49-megapixel image) leaves the worker's heap holding its freed buffers: trim it,
    # and a worker still over its idle size asks to be replaced, once this request is done (gunicorn's
    # max_requests counts requests; this counts bytes). core/allocator.py, docs/performance.md.
    _memory_after_request(worker)


def _memory_after_request(worker):
    guard = getattr(worker, "memory_guard", None)
    if guard is not None and guard.after_request() == "restart" and worker.alive:
        worker.log.info("Restarting worker %s: %d MB resident after a request, idle %d MB", worker.pid,
                        guard.last_rss // 2**20, guard.idle // 2**20)
        worker.alive = False


def _memory_guard_start(worker):
    # The worker's idle size, taken once it can serve (core/allocator.py MemoryGuard).
    from core.allocator import MemoryGuard

    worker.memory_guard = MemoryGuard()


def post_worker_init(worker):
    # Logged once Django is loaded, so "Booting worker" followed by this means the worker can serve.
    _memory_guard_start(worker)
    worker.log.info("Worker ready (pid: %s)", worker.pid)
