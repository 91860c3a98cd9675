"""Growth: the service's figures with 10,000,000 records in PostgreSQL, against the same at 100,000.

Two commands. `seed` fills a database to --records records (resumable: it continues from what is there);
`measure` takes the figures on a seeded database.

    .venv/bin/python bench/growth.py seed --records 10000000 --database-url postgres://...:5432/h_growth
        [--rebuild-indexes] [--random-signatures]
    .venv/bin/python bench/growth.py measure --database-url ... [--parts lookups,verify,insert,log,size]
        [--duration 10] [--connections 32]

What the seed writes. Records are made in Python and written with COPY (psycopg 3), 100,000 a
transaction, in the order of their `signed_at` (1.5 s apart, from 2026-03-01: 10^7 records span about
six months), spread over 40 Scale-plan organizations by a Zipf law (the largest holds about a quarter),
each with one to three generators (two in three client-managed, the rest server-managed), several model
names each. Ids are random (uuid4); content hashes random, one record in a hundred re-signs a recent
hash; formats image, video, audio and text for server-managed generators (client-managed records have
none, as POST /v1/records leaves them). pHashes are made like imagehash's: the DC bit set and 31 of the
other 63 bits (a median threshold sets half); one image record in five is a near copy of an earlier
one (1 to 6 bits flipped: a re-encode signed again), one in fifty takes one of 200 crowded values
(flat and blank images); video records use video-phash, audio and text records have none.

What is real and what is not:
- every 5,000th record (log index 0, 5000, ...) is REALLY signed: a client-managed generator's
  ML-DSA-65 signature over its signed payload, its content the bytes `growth sample <index>` (hashed
  as verification hashes them), so POST /v1/verify with its token answers `authentic: true`;
- every other record's signature is a stand-in of the real size (3,309 bytes): by default one
  repeated 16-byte pattern, which PostgreSQL compresses inline (so 10^7 records fit on this disk), or
  random bytes with --random-signatures (stored out of line in TOAST, as real ones are: the size
  figure at 10^5 uses it). No verification ever checks a stand-in: the sequencer hashes entries, the
  lookups return rows;
- the transparency log holds every seeded record: the seed computes each record's leaf with the
  service's own functions (`transparency.selectors.entry_of`, `merkle.leaf_hash`, `tiles.append_leaves`)
  100,000 at a time and writes the records with their log index and the tiles in one transaction;
  `measure` then times the service's sequencer itself (`log_sequence`) on new pending records;
- the Fingerprint rows (the values the pHash search scans) are written beside each batch, as the
  insert trigger would (triggers and foreign-key checks are off for the COPY: session_replication_role).

--rebuild-indexes drops provenance_record's secondary indexes (and Fingerprint's band indexes) before a
large seed and builds them again after (their definitions are kept in the table bench_growth_index, so a
killed run still rebuilds them on its next start). Built in one go, they are denser than indexes grown
insert by insert (the size figures say which).
"""

import argparse
import base64
import hashlib
import itertools
import json
import os
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve
from bench.transparency_log import _alive, _cpu_seconds

ORGS = 40
SAMPLE_EVERY = 5000  # records really signed: log index % SAMPLE_EVERY == 0
BATCH = 100_000
EPOCH = datetime(2026, 3, 1, tzinfo=UTC)
SPACING = timedelta(milliseconds=1500)
SIGNATURE_BYTES = 3309  # ML-DSA-65
# A stand-in's 16 bytes make a heap row as long as a real record's, whose 3,309 bytes go out of line (an
# 18-byte TOAST pointer stays in the row); the TOAST they would fill is measured on the real ones.
STAND_IN = hashlib.sha256(b"growth stand-in").digest()[:16]
CROWDED_VALUES = 200
MODELS = ("diffusion-xl", "diffusion-2", "vision-3", "gen-video-1", "voice-2", "writer-4", "upscale-1", "edit-5")
PREFIX = "growth"
COLUMNS = ("id", "org_id", "generator_id", "key_id", "model", "watermark_id", "content_hash", "phash",
           "fingerprint_kind", "phash_value", "format", "signed_at", "log_index")
INDEX_TABLE = "bench_growth_index"


# ---------------------------------------------------------------------------------------------- fixtures

def client_seed(org_index: int, generator_index: int) -> bytes:
    """The ML-DSA-65 seed of a client-managed bench generator: derived, so a later run can sign with it."""
    return hashlib.sha256(f"{PREFIX}-seed-{org_index}-{generator_index}".encode()).digest()


def generator_count(org_index: int) -> int:
    return 1 + org_index % 3


def is_client_managed(org_index: int, generator_index: int) -> bool:
    return (org_index + generator_index) % 3 != 0


def fixtures() -> list[dict]:
    """The bench organizations and generators, made once: per generator its org, ids, mode and seed."""
    from accounts.models import Organization
    from generators.models import Generator, GeneratorKey
    from generators.services import SuppliedPublicKey, generator_register
    from record_format import crypto
    from tests import factories

    made = []
    for org_index in range(ORGS):
        name = f"{PREFIX}-org-{org_index:02d}"
        org = Organization.objects.filter(name=name).first() or Organization.objects.create(name=name, plan="scale")
        for generator_index in range(generator_count(org_index)):
            generator_name = f"{PREFIX}-gen-{org_index:02d}-{generator_index}"
            generator = Generator.objects.filter(org=org, name=generator_name).first()
            client = is_client_managed(org_index, generator_index)
            seed = client_seed(org_index, generator_index) if client else None
            if generator is None and client:
                public = crypto.public_key_from_seed(seed)
                generator = generator_register(org=org, name=generator_name, public_key=SuppliedPublicKey(
                    kid=crypto.key_id(public), algorithm="ml-dsa-65", key=public))
            elif generator is None:
                generator = factories.make_generator(org=org, name=generator_name)
            key = GeneratorKey.objects.get(generator=generator, retired_at=None)
            made.append({"org_index": org_index, "org": org.pk, "generator": generator.pk, "key": key.pk,
                         "kid": key.kid, "client": client, "seed": seed})
    return made


# ---------------------------------------------------------------------------------------------- records

def signed_at(index: int) -> datetime:
    return EPOCH + SPACING * index


def sample_content(index: int) -> bytes:
    return f"growth sample {index}".encode()


def imagehash_like(rng: random.Random) -> int:
    """A 64-bit value shaped like imagehash.phash: the first (DC) bit set, 31 of the other 63 set."""
    value = 1 << 63
    for bit in rng.sample(range(63), 31):
        value |= 1 << bit
    return value


def imagehash_like_many(rng, count: int):
    """`count` such values at once (numpy uint64): the 31 smallest of 63 random keys set their bits."""
    import numpy as np

    keys = rng.random((count, 63))
    bits = keys <= np.partition(keys, 30, axis=1)[:, 30:31]
    return (bits.astype(np.uint64) << np.arange(63, dtype=np.uint64)).sum(axis=1, dtype=np.uint64) | np.uint64(1 << 63)


def flip_masks(rng, count: int):
    """`count` masks of 1 to 6 random bits (a near copy's difference from its original)."""
    import numpy as np

    masks = np.zeros(count, dtype=np.uint64)
    for _ in range(6):
        bit = np.uint64(1) << rng.integers(0, 64, size=count, dtype=np.uint64)
        masks |= np.where(rng.random(count) < 0.5, bit, np.uint64(0))
    masks |= np.uint64(1) << rng.integers(0, 64, size=count, dtype=np.uint64)
    return masks


def crowded_value(number: int) -> int:
    return imagehash_like(random.Random(f"crowd-{number}"))


def flip(value: int, bits: int, rng: random.Random) -> int:
    for bit in rng.sample(range(64), bits):
        value ^= 1 << bit
    return value


def signed64(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value


class RecordMaker:
    """Makes the records of log indexes [start, stop): the same rows for the same indexes on every run."""

    def __init__(self, generators: list[dict]):
        self.generators = generators
        weights = [1 / (rank + 1) for rank in range(ORGS)]  # Zipf: organization 0 the largest
        self.org_weights = weights
        self.by_org = {}
        for generator in generators:
            self.by_org.setdefault(generator["org_index"], []).append(generator)
        self.clients = [g for g in generators if g["client"]]

    def rows(self, start: int, stop: int, random_signatures: bool,
             salt: int = 0) -> tuple[list[tuple], list[tuple], list[bytes]]:
        """(COPY rows, their log-entry tuples as `entry_of` reads them, signatures) of the batch. Vectorised
        draws (numpy), one Python pass to assemble the rows."""
        import numpy as np

        from record_format import crypto
        from record_format.hashing import content_hash_of
        from record_format.payload import signed_payload_bytes

        n = stop - start
        rng = np.random.default_rng([start, 7, salt])
        org_of = rng.choice(ORGS, size=n, p=np.array(self.org_weights) / sum(self.org_weights))
        generator_pick = rng.integers(0, 3, size=n)
        model_of = rng.integers(0, len(MODELS), size=n)
        ids = rng.bytes(16 * n).hex()
        hashes = rng.bytes(32 * n).hex()
        marks = rng.bytes(8 * n).hex()
        draws = rng.random((n, 4))  # re-signed hash, client record has a pHash, pHash shape, format
        reuse = rng.integers(1, 1000, size=n)  # how far back a re-signed hash or a near copy's original is
        values = imagehash_like_many(rng, n)
        flips = flip_masks(rng, n)
        crowd = rng.integers(0, CROWDED_VALUES, size=n)
        crowds = [crowded_value(number) for number in range(CROWDED_VALUES)]
        formats = np.searchsorted(np.cumsum([0.7, 0.1, 0.1, 0.1]), draws[:, 3], side="right").clip(0, 3)
        rows, entries, signatures = [], [], []
        content_hashes: list[str] = []
        phash_values: list[int] = []
        for offset in range(n):
            index = start + offset
            h = ids[32 * offset:32 * offset + 32]
            record_id = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"
            sample = index % SAMPLE_EVERY == 0
            if sample:
                generator = self.clients[(index // SAMPLE_EVERY) % len(self.clients)]
            else:
                choices = self.by_org[int(org_of[offset])]
                generator = choices[int(generator_pick[offset]) % len(choices)]
            model = MODELS[model_of[offset]]
            if sample:
                content_hash = content_hash_of(sample_content(index))
            elif offset >= 1000 and draws[offset, 0] < 0.01:
                content_hash = content_hashes[offset - int(reuse[offset])]
            else:
                content_hash = "sha3-256:" + hashes[64 * offset:64 * offset + 64]
            content_hashes.append(content_hash)
            if generator["client"]:
                record_format = None
                watermark_id = "wm-" + marks[16 * offset:16 * offset + 12]
                kind = "image-phash" if draws[offset, 1] < 0.6 else None
            else:
                record_format = ("image", "video", "audio", "text")[formats[offset]]
                watermark_id = marks[16 * offset:16 * offset + 16] if record_format != "video" else "none"
                kind = {"image": "image-phash", "video": "video-phash"}.get(record_format)
            value = None
            if kind:
                shape = draws[offset, 2]
                if shape < 0.02:
                    value = crowds[crowd[offset]]
                elif shape < 0.22 and len(phash_values) > int(reuse[offset]):
                    value = phash_values[-int(reuse[offset])] ^ int(flips[offset])
                else:
                    value = int(values[offset])
                phash_values.append(value)
            at = signed_at(index)
            if sample:
                payload = {"content_hash": content_hash, "generator_id": str(generator["generator"]), "model": model,
                           "watermark_id": watermark_id}
                signature = crypto.sign(generator["seed"], signed_payload_bytes(**payload))
            elif random_signatures:
                signature = rng.bytes(SIGNATURE_BYTES)
            else:
                signature = STAND_IN
            rows.append((record_id, generator["org"], generator["generator"], generator["key"], model, watermark_id,
                         content_hash, f"{value:016x}" if value is not None else None, kind,
                         signed64(value) if value is not None else None, record_format, at, index))
            entries.append((record_id, content_hash, generator["generator"], model, watermark_id, signature,
                            generator["kid"], at))
            signatures.append(signature)
        return rows, entries, signatures


# ---------------------------------------------------------------------------------------------- seeding

def secondary_indexes(table: str) -> list[tuple[str, str]]:
    """(name, definition) of `table`'s indexes that back no constraint and no foreign-key lookup we keep."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("""
            SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x
            JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
            WHERE t.relname = %s AND NOT x.indisprimary AND NOT x.indisunique
              AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.oid)""", [table])
        return list(cursor.fetchall())


def drop_indexes() -> None:
    """Drop provenance_record's primary key (and the foreign keys that need it) and its secondary indexes, and
    Fingerprint's band indexes, keeping the statements that make them again in INDEX_TABLE (ordered by name)."""
    from django.db import connection, transaction

    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {INDEX_TABLE} (name text PRIMARY KEY, definition text NOT NULL)")
        cursor.execute("""
            SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid), contype FROM pg_constraint
            WHERE confrelid = 'provenance_record'::regclass
               OR (conrelid = 'provenance_record'::regclass AND contype = 'p')
            ORDER BY contype = 'p'""")
        drops = [(f"{0 if kind == 'p' else 1}-{name}", f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}',
                  f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
                 for table, name, definition, kind in cursor.fetchall()]
        drops += [(f"2-{name}", definition, f'DROP INDEX "{name}"')
                  for table in ("provenance_record", "provenance_fingerprint")
                  for name, definition in secondary_indexes(table)]
        for name, definition, drop in drops:
            with transaction.atomic():
                cursor.execute(f"INSERT INTO {INDEX_TABLE} VALUES (%s, %s) ON CONFLICT DO NOTHING",
                               [name, definition])
                cursor.execute(drop)
            print(f"  dropped {name}", flush=True)


def rebuild_indexes() -> None:
    """Make again every key and index a (possibly killed) --rebuild-indexes run dropped."""
    from django.db import connection, transaction

    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s)", [INDEX_TABLE])
        if cursor.fetchone()[0] is None:
            return
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute(f"SELECT name, definition FROM {INDEX_TABLE} ORDER BY name")
        for name, definition in cursor.fetchall():
            started = time.perf_counter()
            with transaction.atomic():
                cursor.execute(definition)
                cursor.execute(f"DELETE FROM {INDEX_TABLE} WHERE name = %s", [name])
            print(f"  built {name} in {time.perf_counter() - started:.0f} s", flush=True)
        cursor.execute(f"DROP TABLE {INDEX_TABLE}")


def _copy_text(value) -> str:
    """A value in COPY's text format (every seeded value is ASCII without tabs, newlines or backslashes)."""
    if value is None:
        return "\\N"
    if isinstance(value, bytes):
        return "\\\\x" + value.hex()
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


_MAKER: "RecordMaker | None" = None  # the worker processes' (forked with it)


def batch_payload(task: tuple[int, int, bool]) -> dict:
    """In a worker process: a batch's rows as COPY text, its leaf hashes, its real signatures and its
    fingerprint values. Stand-in signatures are left to the column's default (not sent 10^7 times)."""
    from transparency import merkle
    from transparency.selectors import entry_of

    start, stop, random_signatures = task
    rows, entries, signatures = _MAKER.rows(start, stop, random_signatures)
    leaves = b"".join(merkle.leaf_hash(entry_of(entry)) for entry in entries)
    text = "".join("\t".join(map(_copy_text, (*row, signature))) + "\n"
                   for row, signature in zip(rows, signatures, strict=True))
    fingerprints = {(row[8], row[9]) for row in rows if row[9] is not None}
    return {"start": start, "stop": stop, "text": text.encode(), "leaves": leaves,
            "fingerprints": sorted(fingerprints)}


def seed_batch(payload: dict) -> int:
    """One transaction: a batch of records (COPY), its real signatures, its Fingerprint values, its tiles and
    the log's new integrated tree. Returns the log's size after it."""
    from django.db import connection, transaction

    from transparency import merkle
    from transparency.models import LogTile
    from transparency.services import _locked_state
    from transparency.tiles import TILE_WIDTH, TileReader, append_leaves, edge_tiles

    clock = [time.perf_counter()]
    with transaction.atomic():
        state = _locked_state()
        start = state.integrated_size
        if start != payload["start"]:
            raise RuntimeError(f"the log holds {start} records, the batch starts at {payload['start']}")
        blob = payload["leaves"]
        leaves = [blob[i:i + merkle.HASH_BYTES] for i in range(0, len(blob), merkle.HASH_BYTES)]
        edge = {(level, index): bytes(hashes) for level, index, hashes
                in LogTile.objects.filter(width__lt=TILE_WIDTH).values_list("level", "index", "hashes")}
        appended = append_leaves(start, edge_tiles(start, edge), leaves)
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL session_replication_role = replica")  # no triggers, no FK checks
            cursor.execute("SET LOCAL synchronous_commit = off")
            with cursor.copy(f"COPY provenance_record ({', '.join(COLUMNS)}, signature) FROM STDIN") as copy:
                copy.write(payload["text"])
            clock.append(time.perf_counter())
            fingerprints = payload["fingerprints"]
            cursor.execute("""
                INSERT INTO provenance_fingerprint (kind, value, band0, band1, band2, band3)
                SELECT kind, value, (value >> 48) & 65535, (value >> 32) & 65535, (value >> 16) & 65535,
                       value & 65535
                FROM unnest(%s::text[], %s::bigint[]) AS v(kind, value)
                ON CONFLICT (kind, value) DO NOTHING""",
                           [[kind for kind, _ in fingerprints], [value for _, value in fingerprints]])
        LogTile.objects.bulk_create(
            [LogTile(level=level, index=index, width=len(hashes) // merkle.HASH_BYTES, hashes=hashes)
             for (level, index), hashes in appended.tiles.items()],
            update_conflicts=True, unique_fields=["level", "index"], update_fields=["width", "hashes"])
        state.integrated_size = appended.tree_size
        state.integrated_root = merkle.root_hash(appended.tree_size,
                                                 TileReader({**edge, **appended.tiles}).node)
        state.save()
    clock.append(time.perf_counter())
    print("  COPY {:.1f} s, fingerprints and tiles {:.1f} s".format(
        *(b - a for a, b in itertools.pairwise(clock))), flush=True)
    return appended.tree_size


def seed(args: argparse.Namespace) -> None:
    """Seed to args.records: worker processes make the batches (rows, leaves), this one writes them in order."""
    import multiprocessing

    global _MAKER
    serve.django_in_process(environment(args))
    from django.db import connection, connections

    from transparency.models import LogState
    from transparency.services import log_checkpoint_sign, log_sequence

    log_sequence()  # records POSTed by an earlier `measure` take their indexes before the seed goes on
    _MAKER = RecordMaker(fixtures())
    size = LogState.objects.filter(pk=1).values_list("integrated_size", flat=True).first() or 0
    if args.rebuild_indexes and size < args.records:
        drop_indexes()
    tasks = [(start, min(start + BATCH, args.records), args.random_signatures)
             for start in range(size, args.records, BATCH)]
    started, first = time.perf_counter(), size
    connections.close_all()  # the workers are forked: none may share this process's connection
    with multiprocessing.get_context("fork").Pool(args.seed_workers) as pool:
        window = args.seed_workers + 1  # batches made ahead, at most (memory)
        pending = [pool.apply_async(batch_payload, (task,)) for task in tasks[:window]]
        for number in range(len(tasks)):
            payload = pending.pop(0).get()
            if number + window < len(tasks):
                pending.append(pool.apply_async(batch_payload, (tasks[number + window],)))
            size = seed_batch(payload)
            rate = (size - first) / (time.perf_counter() - started)
            print(f"  {size:,} records ({rate:,.0f}/s)", flush=True)
    seconds = time.perf_counter() - started
    rebuild_indexes()
    log_checkpoint_sign()
    with connection.cursor() as cursor:
        for table in ("provenance_record", "provenance_fingerprint", "transparency_logtile"):
            cursor.execute(f"VACUUM ANALYZE {table}")
    print(f"\nseeded {size - first:,} records in {seconds:.0f} s; {size:,} in the log; "
          f"all done in {time.perf_counter() - started:.0f} s")


# ---------------------------------------------------------------------------------------------- measuring

def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def timing_row(label: str, timings: list[float], shown: str = "") -> str:
    return (f"| {label} | {shown} | {statistics.median(timings):.2f} | {percentile(timings, 0.99):.2f} "
            f"| {max(timings):.2f} |")


def log_size() -> int:
    from transparency.models import LogState

    return LogState.objects.filter(pk=1).values_list("tree_size", flat=True).first() or 0


def random_records(count: int, rng: random.Random) -> list[tuple]:
    """(id, content_hash, fingerprint_kind, phash) of `count` records at random log indexes."""
    from provenance.models import Record

    indexes = [rng.randrange(log_size()) for _ in range(count)]
    return list(Record.objects.filter(log_index__in=indexes)
                .values_list("id", "content_hash", "fingerprint_kind", "phash"))


def samples(count: int) -> list[tuple[int, uuid.UUID]]:
    """(log index, id) of up to `count` really signed records, spread over the log."""
    from provenance.models import Record

    size = log_size()
    total = (size + SAMPLE_EVERY - 1) // SAMPLE_EVERY
    step = max(1, total // count)
    wanted = [n * SAMPLE_EVERY for n in range(0, total, step)][:count]
    return list(Record.objects.filter(log_index__in=wanted).order_by("log_index").values_list("log_index", "id"))


def explain_ms(sql: str, params) -> float:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + sql, params)
        return cursor.fetchone()[0][0]["Execution Time"]


def lookups_table(args: argparse.Namespace) -> None:
    """Query level, one connection: the token's record, the exact hash's, the pHash's."""
    from verification import selectors

    rng = random.Random(5)
    picked = random_records(args.queries, rng)
    ids = [row[0] for row in picked]
    hashes = [row[1] for row in picked]
    misses = ["sha3-256:" + f"{rng.getrandbits(256):064x}" for _ in range(args.queries)]
    phashes = [(kind, value) for _, _, kind, value in picked if value][:args.queries]
    near = [(kind, f"{flip(int(value, 16), rng.randint(0, 7), rng):016x}") for kind, value in phashes]
    fresh = [("image-phash", f"{imagehash_like(rng):016x}") for _ in range(args.queries)]
    crowd = [("image-phash", f"{flip(crowded_value(rng.randrange(CROWDED_VALUES)), rng.randint(0, 3), rng):016x}")
             for _ in range(args.queries)]

    def timed(call, inputs) -> tuple[list[float], int]:
        for item in inputs[:30]:
            call(item)  # warm the statement and the upper index pages
        timings, found = [], 0
        for item in inputs:
            began = time.perf_counter()
            found += call(item) is not None
            timings.append((time.perf_counter() - began) * 1000)
        return timings, found

    sql_exact = (selectors._EARLIEST_WITH_HASH._compiled or selectors._EARLIEST_WITH_HASH._compile())[0]
    print(f"\nLookups at query level, one connection, {log_size():,} records in the log; ms\n")
    print("| lookup | found | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|")
    for label, call, inputs in (
            ("by id (a token's record, with org, key, generator)", selectors.record_for_id, ids),
            ("by id, really signed records (3,309-byte signature out of line)", selectors.record_for_id,
             [record_id for _, record_id in samples(args.queries)]),
            ("exact hash, hit", selectors.record_for_content_hash, hashes),
            ("exact hash, miss", selectors.record_for_content_hash, misses),
            ("pHash, near a stored value (0-7 bits)", lambda q: selectors.nearest_fingerprint(kind=q[0], value=q[1]),
             near),
            ("pHash, a new picture's (mostly no match)",
             lambda q: selectors.nearest_fingerprint(kind=q[0], value=q[1]), fresh),
            ("pHash, near a crowded value", lambda q: selectors.nearest_fingerprint(kind=q[0], value=q[1]), crowd)):
        timings, found = timed(call, inputs)
        print(timing_row(label, timings, f"{found}/{len(inputs)}"), flush=True)
    server = [explain_ms(sql_exact, [content_hash]) for content_hash in hashes[:300]]
    print(timing_row("exact hash, hit: PostgreSQL execution", server, "-"))
    server = [explain_ms(selectors._NEAREST_SQL, _nearest_params(kind, value)) for kind, value in near[:300]]
    print(timing_row("pHash, near: PostgreSQL execution", server, "-"))
    server = [explain_ms(selectors._NEAREST_SQL, _nearest_params(kind, value)) for kind, value in fresh[:300]]
    print(timing_row("pHash, new picture: PostgreSQL execution", server, "-"))


def _nearest_params(kind: str, value: str) -> dict:
    from provenance.phash_bands import band_neighbours, phash_bands, signed_value
    from verification import selectors

    neighbours = [band_neighbours(band, selectors._BAND_RADIUS) for band in phash_bands(value)]
    return {"kind": kind, "value": signed_value(value), "max": selectors.PHASH_MAX_DISTANCE,
            **{f"band{band}": values for band, values in enumerate(neighbours)}}


def multipart(fields: dict[str, str], content: bytes) -> tuple[str, str]:
    boundary = uuid.uuid4().hex
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
             for name, value in fields.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="content"; filename="c.txt"\r\n'
                 f"Content-Type: application/octet-stream\r\n\r\n{content.decode()}\r\n--{boundary}--\r\n")
    return "".join(parts), f"multipart/form-data; boundary={boundary}"


def requests_lua(requests: list[tuple[str, str, str, dict[str, str]]]) -> str:
    """A wrk script cycling through (method, path, body, headers) requests."""
    def lua_string(text: str) -> str:
        # A quoted string with escapes: a long bracket string would turn the multipart body's CR LF into LF.
        escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "\\r").replace("\n", "\\n")
        return f'"{escaped}"'

    entries = ",\n".join("{" + ", ".join([lua_string(method), lua_string(path), lua_string(body) if body else "nil",
                                          "{" + ", ".join(f"[{lua_string(k)}] = {lua_string(v)}"
                                                          for k, v in headers.items()) + "}"]) + "}"
                         for method, path, body, headers in requests)
    return f"""local entries = {{
{entries}
}}
local counter = 0
request = function()
  counter = counter + 1
  local e = entries[(counter % #entries) + 1]
  return wrk.format(e[1], e[2], e[4], e[3])
end
"""


def verify_requests(count: int) -> list[tuple]:
    from provenance.selectors import record_token

    return [("POST", "/v1/verify", *multipart({"token": record_token(record_id)}, sample_content(index)))
            for index, record_id in samples(count)]


def _as_request(method: str, path: str, body: str, content_type: str) -> tuple:
    return (method, path, body, {"Content-Type": content_type} if content_type else {})


def check_answers(url: str, requests: list[tuple], expect) -> int:
    """Send each request once (plain HTTP, before the load) and count the answers `expect` accepts."""
    import urllib.request

    good = 0
    for method, path, body, headers in requests:
        request = urllib.request.Request(url + path, data=body.encode() if body else None, headers=headers,
                                         method=method)
        with urllib.request.urlopen(request) as response:
            good += bool(expect(response.status, json.loads(response.read())))
    return good


def record_bodies(count: int, rng: random.Random) -> list[tuple]:
    """Distinct POST /v1/records requests of the bench's client-managed generators, really signed."""
    from record_format import crypto
    from record_format.payload import signed_payload_bytes
    from tests import factories

    generators = [g for g in fixtures() if g["client"]]
    api_keys = {}
    requests = []
    for number in range(count):
        generator = generators[number % len(generators)]
        if generator["org"] not in api_keys:
            from accounts.models import Organization

            api_keys[generator["org"]] = factories.make_api_key(org=Organization.objects.get(pk=generator["org"]))
        payload = {"content_hash": "sha3-256:" + f"{rng.getrandbits(256):064x}",
                   "generator_id": str(generator["generator"]), "model": MODELS[number % len(MODELS)],
                   "watermark_id": f"wm-{rng.getrandbits(48):012x}"}
        signature = crypto.sign(generator["seed"], signed_payload_bytes(**payload))
        body = {**payload, "signature": base64.b64encode(signature).decode(), "signed_payload": payload,
                "phash": f"{imagehash_like(rng):016x}"}
        requests.append(("POST", "/v1/records", json.dumps(body),
                         {"Content-Type": "application/json", "Authorization": f"Bearer {api_keys[generator['org']]}"}))
    return requests


def routes_table(env: dict[str, str], args: argparse.Namespace, parts: set[str]) -> None:
    """Through gunicorn (production's worker class, DEBUG off) and wrk at --connections."""
    import base64 as b64

    rng = random.Random(8)
    loads = []
    if "verify" in parts:
        by_token = [_as_request(method, path, body, kind) for method, path, body, kind in verify_requests(400)]
        loads.append(("POST /v1/verify with a token (authentic)", by_token,
                      lambda status, body: status == 200 and body["authentic"] is True
                      and body["token_source"] == "provided"))
        by_hash = [_as_request("POST", "/v1/verify", *multipart({}, sample_content(index)))
                   for index, _ in samples(400)]
        loads.append(("POST /v1/verify without a token (found by exact hash)", by_hash,
                      lambda status, body: status == 200 and body["token_source"] == "content_hash"))
        picked = [row for row in random_records(800, rng) if row[3]][:400]
        by_phash = [("GET", "/v1/c2pa/matches/byBinding?alg=service.{}.1&value={}".format(
            kind, b64.b64encode(flip(int(value, 16), rng.randint(0, 7), rng).to_bytes(8, "big")).decode()
            .replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")), "", {}) for _, _, kind, value in picked]
        loads.append(("GET /v1/c2pa/matches/byBinding (pHash near a stored one)", by_phash,
                      lambda status, body: status == 200 and len(body["matches"]) == 1))
    if "insert" in parts:
        loads.append(("POST /v1/records (one record, distinct signed bodies)", record_bodies(args.bodies, rng),
                      lambda status, body: status == 201))
    print(f"\nRoutes: gunicorn {args.workers} x {args.worker_class} workers, DEBUG off, PostgreSQL, "
          f"{'Redis' if env.get('REDIS_URL') else 'database cache'}; wrk {args.connections} connections, "
          f"{args.duration} s after a 3 s warm-up, {args.repeats} windows; {log_size():,} records in the log; "
          f"load average before: {os.getloadavg()[0]:.1f}\n", flush=True)
    print("| route | checked before | req/s (median) | p50 ms | p99 ms | non-2xx | every window req/s "
          "| CPU ms a request: workers + PostgreSQL |")
    print("|---|---|---|---|---|---|---|---|")
    server: dict[str, int] = {}
    with serve.gunicorn(env, workers=args.workers, worker_class=args.worker_class, threads=args.threads,
                        on_start=lambda process, port: server.update(pid=process.pid)) as url:
        for label, requests, expect in loads:
            sample = requests[:20]
            good = check_answers(url, sample, expect)
            lua = requests_lua(requests)
            serve.wrk(url, lua=lua, duration=3, connections=args.connections)
            workers, backends = server_processes(server["pid"])
            before = {pid: _cpu_seconds(pid) for pid in workers + backends}
            runs = [serve.wrk(url, lua=lua, duration=args.duration, connections=args.connections)
                    for _ in range(args.repeats)]
            used = {pid: _cpu_seconds(pid) - cpu for pid, cpu in before.items() if _alive(pid)}
            requests_done = sum(r["requests"] for r in runs)
            web_ms = sum(used.get(pid, 0.0) for pid in workers) / requests_done * 1000
            database_ms = sum(used.get(pid, 0.0) for pid in backends) / requests_done * 1000
            runs.sort(key=lambda stats: stats["requests_per_second"])
            median = runs[len(runs) // 2]
            every = " / ".join(f"{r['requests_per_second']:.0f}" for r in runs)
            print(f"| {label} | {good}/{len(sample)} | {median['requests_per_second']:.0f} | {median['p50_ms']:.1f} "
                  f"| {median['p99_ms']:.1f} | {sum(r['non_2xx'] + r['socket_errors'] for r in runs)} "
                  f"| {every} | {web_ms:.2f} + {database_ms:.2f} |", flush=True)
            if label.startswith("POST /v1/verify with a token"):  # the service time, without queueing
                alone = serve.wrk(url, lua=lua, duration=args.duration, connections=1)
                print(f"| the same, 1 connection | - | {alone['requests_per_second']:.0f} | {alone['p50_ms']:.1f} "
                      f"| {alone['p99_ms']:.1f} | {alone['non_2xx'] + alone['socket_errors']} | - | - |", flush=True)
    print(f"\nLoad average after: {os.getloadavg()[0]:.1f}")


def server_processes(server_pid: int) -> tuple[list[int], list[int]]:
    """The gunicorn workers (the master's children) and the PostgreSQL backends of this database but ours."""
    from django.db import connection

    workers = [int(pid) for pid in Path(f"/proc/{server_pid}/task/{server_pid}/children").read_text().split()]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                       "AND pid <> pg_backend_pid() AND backend_type = 'client backend'")
        backends = [row[0] for row in cursor.fetchall()]
    return workers, backends


def log_table(args: argparse.Namespace) -> None:
    """The service's sequencer on pending records, then inclusion and consistency proofs through the routes."""
    from django.db import connection
    from django.test import Client

    from provenance.models import Record
    from transparency.services import log_sequence

    pending = Record.objects.filter(log_index__isnull=True).count()
    if pending < args.pending:
        _add_pending(args.pending - pending)
    pending = Record.objects.filter(log_index__isnull=True).count()
    before = log_size()
    started = time.perf_counter()
    count = log_sequence()
    seconds = time.perf_counter() - started
    size = log_size()
    print(f"\n| sequencing (`log_sequence`, batches of 5,000) | records | seconds | records/s | tree size after |\n"
          f"|---|---|---|---|---|\n| {pending:,} pending records into a log of {before:,} | {count:,} | "
          f"{seconds:.1f} | {count / seconds if seconds else 0:,.0f} | {size:,} |")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE provenance_record")
    rng = random.Random(12)
    client = Client()
    inclusion = [f"/v1/log/inclusion?index={rng.randrange(size)}" for _ in range(args.proofs)]
    consistency = []
    for _ in range(args.proofs):
        first = rng.randrange(1, size)
        consistency.append(f"/v1/log/consistency?first={first}&second={rng.randrange(first, size + 1)}")
    print(f"\nProofs in process through the routes (Django test client), tree of {size:,}, {args.proofs} each\n")
    print("| route | found | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|")
    for label, paths in (("GET /v1/log/inclusion?index=N", inclusion),
                         ("GET /v1/log/consistency?first=M&second=N", consistency),
                         ("GET /v1/log/checkpoint (control: no proof)", ["/v1/log/checkpoint"] * args.proofs)):
        for path in paths[:30]:
            client.get(path)
        timings, good = [], 0
        for path in paths:
            began = time.perf_counter()
            response = client.get(path)
            timings.append((time.perf_counter() - began) * 1000)
            good += response.status_code == 200
        print(timing_row(label, timings, f"{good}/{len(paths)}"), flush=True)


def _add_pending(count: int) -> None:
    """`count` more records without a log index (as POST /v1/records leaves them), by COPY."""
    from django.db import connection, transaction

    maker = RecordMaker(fixtures())
    # Real-size stand-in signatures (the sequencer hashes them into the entries); the indexes only draw the
    # rows (a fresh salt each run: new ids), the log index stays null and signed_at is now.
    rows, _, _ = maker.rows(SAMPLE_EVERY + 1, SAMPLE_EVERY + 1 + count, False, salt=time.time_ns())
    signatures = [random.randbytes(SIGNATURE_BYTES) for _ in rows]
    now = datetime.now(UTC)
    copy_sql = f"COPY provenance_record ({', '.join(COLUMNS[:-2])}, signed_at, signature) FROM STDIN"
    with transaction.atomic(), connection.cursor() as cursor, cursor.copy(copy_sql) as copy:
        for number, (row, signature) in enumerate(zip(rows, signatures, strict=True)):
            copy.write_row((*row[:-2], now + timedelta(microseconds=number), signature))


def size_table() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM provenance_record")
        records = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM provenance_fingerprint")
        values = cursor.fetchone()[0]
        cursor.execute("""
            SELECT c.relname, pg_relation_size(c.oid), pg_total_relation_size(c.oid),
                   coalesce(pg_total_relation_size(c.reltoastrelid), 0)
            FROM pg_class c WHERE c.relname IN ('provenance_record', 'provenance_fingerprint',
                                                'transparency_logtile')""")
        tables = cursor.fetchall()
        cursor.execute("""
            SELECT i.relname, t.relname, pg_relation_size(i.oid) FROM pg_index x
            JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
            WHERE t.relname IN ('provenance_record', 'provenance_fingerprint') ORDER BY t.relname, 3 DESC""")
        indexes = cursor.fetchall()
        cursor.execute("SELECT count(*) FILTER (WHERE octet_length(signature) > 2000) FROM provenance_record")
        out_of_line = cursor.fetchone()[0]
        cursor.execute("SELECT count(*), pg_total_relation_size('audit_auditevent') FROM audit_auditevent")
        events, events_size = cursor.fetchone()
        cursor.execute("SELECT pg_database_size(current_database())")
        database = cursor.fetchone()[0]
    print(f"\nSizes: {records:,} records, {values:,} distinct fingerprint values; database {database / 1e9:.2f} GB\n")
    print("| relation | MB | bytes a record |\n|---|---|---|")
    for name, heap, total, toast in tables:
        print(f"| {name}: table | {heap / 1e6:,.1f} | {heap / records:,.1f} |")
        print(f"| {name}: TOAST | {toast / 1e6:,.1f} | {toast / records:,.1f} |")
        print(f"| {name}: table, TOAST and indexes | {total / 1e6:,.1f} | {total / records:,.1f} |")
    for name, table, size in indexes:
        print(f"| index {name} ({table}) | {size / 1e6:,.1f} | {size / records:,.1f} |")
    if events:
        print(f"\nAudit events (one a verification of a record, one a record made): {events:,}, "
              f"{events_size / events:,.0f} bytes each with their indexes.")
    toast = next(toast for name, _, _, toast in tables if name == "provenance_record")
    if out_of_line:
        print(f"\nRecords with a real-size signature (out of line): {out_of_line:,}; provenance_record's TOAST "
              f"{toast / out_of_line:,.0f} bytes for each.")


def environment(args: argparse.Namespace, **settings: str) -> dict[str, str]:
    """The server environment; the database migrated unless --no-migrate (figures before a migration)."""
    redis_url = args.redis_url if serve.redis_reachable(args.redis_url) else None
    if args.no_migrate:
        return {**serve.server_env(args.database_url, redis_url), **settings}
    return serve.prepared_database(args.database_url, redis_url, **settings)


def measure(args: argparse.Namespace) -> None:
    env = environment(args, VERIFY_RATE_PER_MINUTE=str(10**9))  # the verify load comes from one address
    serve.django_in_process(env)
    parts = set(args.parts.split(","))
    if "size" in parts:
        size_table()
    if "lookups" in parts:
        lookups_table(args)
    if parts & {"verify", "insert"}:
        routes_table(env, args, parts)
    if "log" in parts:
        log_table(args)


def main() -> None:
    parser = serve.server_arguments(__doc__)
    parser.add_argument("command", choices=("seed", "measure"))
    parser.add_argument("--records", type=int, default=100_000, help="seed: the log's size to reach")
    parser.add_argument("--rebuild-indexes", action="store_true", help="seed: drop indexes, build them after")
    parser.add_argument("--random-signatures", action="store_true", help="seed: random stand-ins (TOAST)")
    parser.add_argument("--seed-workers", type=int, default=2, help="seed: processes making the batches")
    parser.add_argument("--parts", default="size,lookups,verify,insert,log")
    parser.add_argument("--no-migrate", action="store_true", help="leave the schema as it is (a before figure)")
    parser.add_argument("--queries", type=int, default=2000, help="lookups per kind at query level")
    parser.add_argument("--proofs", type=int, default=1000)
    parser.add_argument("--pending", type=int, default=50_000, help="records the sequencer is timed on")
    parser.add_argument("--bodies", type=int, default=1000, help="distinct POST /v1/records bodies")
    parser.set_defaults(database_url="postgres://postgres@127.0.0.1:5432/h_growth", repeats=3, worker_class="whole")
    args = parser.parse_args()
    seed(args) if args.command == "seed" else measure(args)


if __name__ == "__main__":
    main()
