"""Signature counting (signer/counting.py): exact under concurrent signing, folds from Redis that neither lose
nor double-count across a crash at any step, a signer process that stores its counts when it stops, the
operator's command and read-only admin page."""

import io
import threading
import uuid
from collections import Counter
from pathlib import Path

import pytest
import redis
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from core.errors import Forbidden
from signer import counting
from signer.counting import CountKey, RedisTally, counts_store
from signer.models import SignatureCount, SignatureCountFold
from signer.signing import signature_of
from tests import factories
from tests.redis_server import requires_redis
from tests.signer.processes import signer_environment, start_signer

ROOT = Path(__file__).resolve().parents[2]
THREADS, PER_THREAD = 8, 25


def _today() -> str:
    return timezone.now().date().isoformat()


def _count_of(generator_id, purpose="record", algorithm="ml-dsa-65") -> int:
    row = SignatureCount.objects.filter(generator_id=generator_id, purpose=purpose, algorithm=algorithm).first()
    return row.count if row else 0


def _in_threads(work, threads: int = THREADS) -> None:
    errors: list[BaseException] = []

    def run():
        try:
            work()
        except BaseException as error:  # reported by the test, not lost in the thread
            errors.append(error)

    started = [threading.Thread(target=run) for _ in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_signatures_made_in_process_by_concurrent_threads_are_counted_exactly(settings):
    settings.REDIS_URL = ""
    org = factories.make_org()
    generator = factories.make_generator(org=org)
    key = generator.keys.select_related("generator").get()

    def sign_some():
        for n in range(PER_THREAD):
            signature_of(key=key, org_id=str(org.pk), purpose="record", algorithm="ml-dsa-65", message=b"m%d" % n)

    _in_threads(sign_some)
    counting.counts_flush()  # whatever the flusher thread has not stored yet
    assert _count_of(generator.pk) == THREADS * PER_THREAD
    row = SignatureCount.objects.get(generator_id=generator.pk)
    assert (row.org_id, row.day.isoformat(), row.purpose, row.algorithm) == (org.pk, _today(), "record", "ml-dsa-65")


@pytest.mark.django_db(transaction=True)  # counts_flush in no test transaction: the flusher may run beside it
def test_a_refused_signature_is_not_counted(settings, other_org):
    settings.REDIS_URL = ""
    generator = factories.make_generator(org=factories.make_org())
    key = generator.keys.get()
    with pytest.raises(Forbidden):
        signature_of(key=key, org_id=str(other_org.pk), purpose="record", algorithm="ml-dsa-65", message=b"m")
    counting.counts_flush()
    assert _count_of(generator.pk) == 0


@pytest.mark.django_db
def test_counts_of_a_checkpoint_have_no_organization_or_generator_and_add_up():
    checkpoint = CountKey("2001-02-03", "", "", "checkpoint", "ed25519")  # a day no signer counts in
    assert counts_store(Counter({checkpoint: 3}))
    assert counts_store(Counter({checkpoint: 4}))
    row = SignatureCount.objects.get(purpose="checkpoint", day="2001-02-03")
    assert (row.org_id, row.generator_id, row.count) == (None, None, 7)


@pytest.fixture
def redis_tally():
    """A RedisTally on the test Redis under a key prefix no one else uses; its keys deleted afterwards."""
    client = redis.Redis(host="127.0.0.1", port=6379)
    prefix = f"test-migrate:signature-counts:{uuid.uuid4().hex}"
    yield lambda: RedisTally(client, prefix)
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)


def _key(generator_id: uuid.UUID) -> CountKey:
    return CountKey(_today(), str(uuid.uuid4()), str(generator_id), "record", "ml-dsa-65")


@requires_redis
@pytest.mark.django_db(transaction=True)
def test_redis_counts_folded_while_threads_count_are_exact(redis_tally):
    generator_id, tally = uuid.uuid4(), redis_tally()
    key = _key(generator_id)
    folding = threading.Event()

    def fold_until_told():
        folder = redis_tally()  # another signer instance folding the same hash
        while not folding.is_set():
            folder.fold()

    folder = threading.Thread(target=fold_until_told)
    folder.start()
    _in_threads(lambda: [tally.count(key) for _ in range(500)])
    folding.set()
    folder.join()
    tally.fold()
    assert _count_of(generator_id) == THREADS * 500


@requires_redis
@pytest.mark.django_db
def test_a_fold_that_stopped_before_storing_is_stored_by_the_next_signer(redis_tally):
    generator_id, crashed = uuid.uuid4(), redis_tally()
    key = _key(generator_id)
    for _ in range(10):
        crashed.count(key)
    assert crashed.claim() is not None  # renamed, then the process dies before its transaction
    crashed.count(key)  # lands in a new live hash
    restarted = redis_tally()
    assert restarted.fold() == 2  # the abandoned folding key and the new live hash
    assert _count_of(generator_id) == 11
    assert restarted.fold() == 0


@requires_redis
@pytest.mark.django_db
def test_a_fold_that_stopped_after_storing_is_not_added_twice(redis_tally):
    generator_id, crashed = uuid.uuid4(), redis_tally()
    key = _key(generator_id)
    for _ in range(10):
        crashed.count(key)
    token = crashed.claim()
    assert crashed.store(token)  # committed, then the process dies before deleting the folding key
    restarted = redis_tally()
    assert restarted.fold() == 0
    assert _count_of(generator_id) == 10
    assert SignatureCountFold.objects.filter(token=token).exists()
    client = redis.Redis(host="127.0.0.1", port=6379)
    assert not [k for k in client.scan_iter(f"{crashed._prefix}*")]  # nothing left to fold


@pytest.mark.django_db(transaction=True)
def test_the_counts_command_prints_a_table_of_recent_days(settings):
    settings.REDIS_URL = ""
    org = factories.make_org(name="Northwind Labs")
    generator_id = uuid.uuid4()
    today = timezone.now().date()
    old = (today - timezone.timedelta(days=10)).isoformat()
    counts_store(Counter({CountKey(today.isoformat(), str(org.pk), str(generator_id), "c2pa-claim", "es256"): 12,
                          CountKey(today.isoformat(), "", "", "checkpoint", "ed25519"): 3,
                          CountKey(old, str(org.pk), str(generator_id), "record", "ml-dsa-65"): 99}))
    out = io.StringIO()
    call_command("signer_counts", "--days", "2", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["day", "organization", "generator", "purpose", "algorithm", "signatures"]
    assert lines[1].split() == [today.isoformat(), "(deployment)", "-", "checkpoint", "ed25519", "3"]
    assert lines[2].split() == [today.isoformat(), "Northwind", "Labs", f"({org.pk})", str(generator_id),
                                "c2pa-claim", "es256", "12"]
    assert lines[3] == f"15 signatures in 2 rows since {(today - timezone.timedelta(days=1)).isoformat()} (UTC)"
    assert old not in out.getvalue()


@pytest.mark.django_db
def test_the_admin_lists_counts_and_allows_no_change(client):
    from accounts.models import User

    generator_id = uuid.uuid4()
    others = Counter({_key(uuid.uuid4()): 1 for _ in range(120)})  # more rows than the list's first page
    counts_store(others + Counter({_key(generator_id): 41}))
    client.force_login(User.objects.create_superuser("staff@example.com", "pw-staff-123"))
    # Filtered to this generator: on PostgreSQL the flusher thread commits the counts of every test that signed
    # before this one in the worker, and the list's first page need not reach this row.
    page = client.get(f"/admin/signer/signaturecount/?generator_id={generator_id}")
    assert page.status_code == 200  # a lookup the admin refused would redirect to ?e=1
    assert str(generator_id) in page.content.decode() and ">41<" in page.content.decode()
    row = SignatureCount.objects.get(generator_id=generator_id)
    assert client.get("/admin/signer/signaturecount/add/").status_code == 403
    assert client.post(f"/admin/signer/signaturecount/{row.pk}/change/", {"count": "1"}).status_code == 403
    assert client.post(f"/admin/signer/signaturecount/{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert SignatureCount.objects.get(pk=row.pk).count == 41


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="the signer process needs the test's database")
def test_a_signer_without_redis_stores_its_counts_when_it_stops(settings, tmp_path):
    from core import signer_client

    secret = "signer-counting-secret-0123456789abcdef0123"
    path = str(tmp_path / "signer.sock")
    process = start_signer(signer_environment(settings, KEY_ENCRYPTION_KEY=settings.KEY_ENCRYPTION_KEY,
                                              SIGNER_SECRET=secret, PYTHONPATH=str(ROOT)), path)
    try:
        settings.SIGNER_SOCKET, settings.SIGNER_SECRET = path, secret
        org = factories.make_org()
        generator = factories.make_generator(org=org)
        key = generator.keys.get()
        for n in range(30):
            signer_client.signature_request(org_id=str(org.pk), generator_id=str(generator.pk), kid=key.kid,
                                            algorithm="ml-dsa-65", purpose="record", message=b"m%d" % n)
    finally:
        process.terminate()  # SIGTERM: the signer stops and stores what it counted since its last flush
        process.wait(timeout=60)
    assert _count_of(generator.pk) == 30


@pytest.mark.django_db(transaction=True)
def test_a_checkpoint_signed_by_the_signer_is_counted_without_organization_or_generator(settings):
    import time

    from core.signer_protocol import SignRequest
    from signer.service import request_sign
    from tests.transparency.logs import make_key, make_records
    from transparency import note, services
    from transparency.models import LogState

    settings.REDIS_URL = ""
    make_records(make_key(), 3)
    services.log_sequence()
    state = LogState.objects.get()
    message = note.Checkpoint(origin=settings.LOG_ORIGIN, tree_size=3, root_hash=bytes(state.root_hash)).text()

    def checkpoints_counted() -> int:
        counting.counts_flush()
        row = SignatureCount.objects.filter(day=_today(), org_id=None, generator_id=None, purpose="checkpoint",
                                            algorithm="ed25519").first()
        return row.count if row else 0

    before = checkpoints_counted()
    answer = request_sign(SignRequest.new(org_id="", generator_id="", algorithm="ed25519", purpose="checkpoint",
                                          message=message.encode(), now_ms=int(time.time() * 1000)))
    assert answer.ok, answer.detail
    assert checkpoints_counted() == before + 1


@pytest.mark.django_db(transaction=True)
def test_checkpoints_signed_in_process_are_counted_too(settings):
    from tests.transparency.logs import make_key, make_records
    from transparency import services

    settings.REDIS_URL = ""
    settings.SIGNER_SOCKET = ""  # no signer service: the sequencer holds the log keys and signs

    def checkpoints_counted(algorithm: str) -> int:
        counting.counts_flush()
        row = SignatureCount.objects.filter(day=_today(), org_id=None, generator_id=None, purpose="checkpoint",
                                            algorithm=algorithm).first()
        return row.count if row else 0

    before = {algorithm: checkpoints_counted(algorithm) for algorithm in ("ed25519", "ml-dsa-65")}
    make_records(make_key(), 3)
    services.log_sequence()
    assert {algorithm: checkpoints_counted(algorithm) for algorithm in before} == {
        algorithm: count + 1 for algorithm, count in before.items()}
