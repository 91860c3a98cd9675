"""Requests fired at the same moment from their own threads, for the row-lock tests (PostgreSQL)."""

import functools
import threading
from collections.abc import Callable

from django.db import connections
from rest_framework.test import APIClient


def released_together(calls: list[Callable[[], object]]) -> list:
    """Run each call from its own thread, all released at the same moment; their results in order.

    Each thread closes the database connections it opened, as a server thread's would be; an exception in
    a thread is raised here, not lost with the thread.
    """
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait()
            results[index] = calls[index]()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return results


def fire_concurrently(calls: list[tuple[str, str, dict | None, str | None]]) -> list[int]:
    """Run each (method, url, body, bearer) at the same moment from its own thread; the statuses in order."""

    def send(client: APIClient, method: str, url: str, body: dict | None) -> int:
        return getattr(client, method)(url, body, format="json").status_code

    sends = []
    for method, url, body, bearer in calls:
        client = APIClient()
        if bearer:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {bearer}")
        sends.append(functools.partial(send, client, method, url, body))
    return released_together(sends)


def responses_concurrently(count: int, send) -> list:
    """Call `send(client)` from `count` threads at the same moment, each with its own APIClient and database
    connection; the responses in thread order."""
    return released_together([functools.partial(send, APIClient()) for _ in range(count)])
