"""Concurrent first use of the C2PA CA and of a key's certificates: one CA, one certificate set (PostgreSQL)."""

import threading

import pytest
from django.db import connection, connections

from generators.certificates import generator_c2pa_credentials, trust_anchor_certificates
from generators.models import CertificateAuthority, GeneratorCertificate, GeneratorKey
from generators.services import generator_register

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks"),
]
THREADS = 4


def _run_together(work) -> list:
    """`work()` in THREADS threads released at once; their results (an exception counts as one)."""
    start, results = threading.Barrier(THREADS), [None] * THREADS

    def run(n: int) -> None:
        start.wait()
        try:
            results[n] = work()
        except Exception as error:  # reported by the assertion below
            results[n] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def test_concurrent_first_use_makes_one_ca_and_one_certificate_per_key(org):
    generator = generator_register(org=org, name="hybrid", public_key=None, c2pa_signing="hybrid")
    key_pk = GeneratorKey.objects.get(generator=generator).pk

    def first_use():
        return generator_c2pa_credentials(GeneratorKey.objects.select_related("generator__org").get(pk=key_pk))

    results = _run_together(first_use)
    assert not [r for r in results if isinstance(r, Exception)], results
    assert {r.es256_chain for r in results} == {results[0].es256_chain}
    assert {r.ml_dsa_chain for r in results} == {results[0].ml_dsa_chain}
    counts = {(ca.family, ca.kind): 0 for ca in CertificateAuthority.objects.all()}
    for ca in CertificateAuthority.objects.all():
        counts[(ca.family, ca.kind)] += 1
    assert counts == {(f, k): 1 for f in ("es256", "ml-dsa-65") for k in ("root", "intermediate")}
    assert GeneratorCertificate.objects.count() == 1


def test_concurrent_trust_anchor_reads_make_one_ca(db):
    results = _run_together(trust_anchor_certificates)
    assert not [r for r in results if isinstance(r, Exception)], results
    assert all(r == results[0] for r in results) and len(results[0]) == 2, [len(r) for r in results]
    assert CertificateAuthority.objects.count() == 4
