"""Run as a separate process on a fresh SQLite file: `migrate` only, then hit the limiter from N threads.

Used by test_ratelimit_concurrency: pytest's in-memory SQLite database is in shared-cache mode, where
a second writer fails at once instead of waiting on the busy timeout; a deployment uses a file, so
the SQLite check runs on one. Prints a JSON object: the counts the threads saw, and any errors.
"""

import json
import os
import sys
import threading
import types

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main(subject: str, limit: int, threads: int) -> dict:
    django.setup()
    from django.core.cache import cache
    from django.core.management import call_command
    from django.db import connections

    from core import ratelimit

    call_command("migrate", verbosity=0)
    cache.set("migrate-made-the-cache-table", 1, 3600)  # no createcachetable was run
    # The limiter's clock stands still during the burst: a burst that a busy machine stretches over a
    # window's edge would be counted in two windows (and pass twice the limit).
    frozen = ratelimit.time.time()
    ratelimit.time = types.SimpleNamespace(time=lambda: frozen)
    barrier = threading.Barrier(threads)
    counts: list[int] = []
    errors: list[str] = []

    def hit() -> None:
        try:
            barrier.wait()
            counts.append(ratelimit.hit(subject, limit).count)
        except Exception as exc:
            errors.append(repr(exc))
        finally:
            connections.close_all()

    workers = [threading.Thread(target=hit) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    return {"counts": sorted(counts), "admitted": sum(count <= limit for count in counts), "errors": errors,
            "cache": cache.get("migrate-made-the-cache-table")}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
