"""The dashboard's signed-file download: a 50 MB file kept in the database, streamed back in pieces.

Stores one `SignedFile` of `--megabytes` random bytes (as the sign page does after signing), then reads
it back through `dashboard.selectors.signed_file_chunks` (one SUBSTRING query per 512 KB piece), as the
download response streams it. Prints the time to store it, the streaming rate, the number of queries,
the peak of Python's own allocations while streaming (tracemalloc: the pieces in flight) and the largest
growth of the process's resident memory over the stream, read after each piece (the database driver's
buffers included; Linux /proc).

The database is a fresh SQLite file in /tmp by default; a PostgreSQL URL names a database of its own that
each run drops and creates again (never `test` or `bench`).

    .venv/bin/python bench/signed_download.py [--megabytes 50]
        [--database-url postgres://postgres@127.0.0.1:5432/bench_download]
"""

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.dashboard_pages import DEFAULT_DATABASE_URL, set_up_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=int, default=50)
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL.replace("pages", "download"))
    args = parser.parse_args()
    set_up_django(args.database_url)

    from datetime import timedelta

    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from dashboard import selectors
    from dashboard.models import SignedFile
    from provenance.models import Record
    from tests import factories

    org = factories.make_org(plan="scale")
    owner = factories.make_user(org=org)
    generator = factories.make_generator(org=org)
    record = Record.objects.create(org=org, generator=generator, key=generator.keys.get(), model="m",
                                   watermark_id="none", content_hash="sha3-256:" + "0" * 64, signature=b"\0")
    data = os.urandom(args.megabytes * 1024 * 1024)
    started = time.perf_counter()
    kept = SignedFile.objects.create(org=org, user=owner, record=record, token="svc_x", filename="f.bin",
                                     mime_type="application/octet-stream", size=len(data), data=data,
                                     expires_at=timezone.now() + timedelta(hours=1))
    stored_s = time.perf_counter() - started
    del data
    kept = selectors.signed_file_get(org=org, user=owner, file_id=kept.pk)  # without its bytes, as the view

    rss_before = _resident()
    rss_growth = 0
    tracemalloc.start()
    started = time.perf_counter()
    total = 0
    with CaptureQueriesContext(connection) as queries:
        for piece in selectors.signed_file_chunks(kept):
            total += len(piece)
            rss_growth = max(rss_growth, _resident() - rss_before)
    streamed_s = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    assert total == kept.size
    engine = connection.vendor
    print(f"{engine}: {args.megabytes} MB stored in {stored_s * 1000:.0f} ms; streamed in {streamed_s * 1000:.0f} ms "
          f"({args.megabytes / streamed_s:.0f} MB/s), {len(queries)} queries of {selectors.CHUNK_BYTES // 1024} KB; "
          f"peak Python allocations while streaming {peak / 1024 / 1024:.1f} MB; resident memory grew at most "
          f"{rss_growth / 1024 / 1024:.1f} MB")


def _resident() -> int:
    """The process's resident memory in bytes."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


if __name__ == "__main__":
    main()
