"""Requests fired at the same moment from their own threads, for the row-lock tests (PostgreSQL)."""

import threading

from django.db import connections
from rest_framework.test import APIClient


def fire_concurrently(calls: list[tuple[str, str, dict | None, str | None]]) -> list[int]:
    """Run each (method, url, body, bearer) at the same moment from its own thread; the statuses in order."""
    barrier = threading.Barrier(len(calls))
    statuses: list[int] = [0] * len(calls)

    def send(index: int) -> None:
        method, url, body, bearer = calls[index]
        client = APIClient()
        if bearer:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {bearer}")
        barrier.wait()
        try:
            statuses[index] = getattr(client, method)(url, body, format="json").status_code
        finally:
            connections.close_all()  # each thread opened its own connection

    threads = [threading.Thread(target=send, args=(index,)) for index in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return statuses


def responses_concurrently(count: int, send) -> list:
    """Call `send(client)` from `count` threads at the same moment, each with its own APIClient and database
    connection; the responses in thread order."""
    barrier = threading.Barrier(count)
    responses: list = [None] * count

    def run(index: int) -> None:
        client = APIClient()
        barrier.wait()
        try:
            responses[index] = send(client)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return responses
