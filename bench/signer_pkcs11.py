"""Signatures per second through the PKCS#11 backend on SoftHSMv2, beside the same algorithms in process.

ES256 and Ed25519 are signed through `Pkcs11Backend` on a fresh SoftHSMv2 token (a temporary directory,
made with softhsm2-util) and in process with pyca cryptography (ES256 converted to r || s, as the backend
returns it); ML-DSA-65, which SoftHSM 2.6.1 lacks, only in process (record_format.crypto.sign with a
seed), for scale. Each case runs with 1 and 4 threads for --seconds; the ratio is PKCS#11 / in process.

    .venv/bin/python bench/signer_pkcs11.py [--seconds 3] [--message-bytes 512]
"""

import argparse
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from cryptography.hazmat.primitives import hashes  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature  # noqa: E402

from record_format import crypto  # noqa: E402
from tests.softhsm import softhsm_missing, softhsm_token_create  # noqa: E402

THREAD_COUNTS = (1, 4)


def _rate(sign_once: Callable[[], object], threads: int, seconds: float) -> float:
    """Signatures per second from `threads` threads each signing in a loop for `seconds`."""
    counts = [0] * threads
    deadline = time.perf_counter() + seconds

    def run(index: int) -> None:
        while time.perf_counter() < deadline:
            sign_once()
            counts[index] += 1

    workers = [threading.Thread(target=run, args=(index,)) for index in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(counts) / (time.perf_counter() - started)


def _es256_in_process(message: bytes) -> Callable[[], object]:
    key = ec.generate_private_key(ec.SECP256R1())

    def sign() -> bytes:
        r, s = decode_dss_signature(key.sign(message, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")

    return sign


def _ed25519_in_process(message: bytes) -> Callable[[], object]:
    key = Ed25519PrivateKey.generate()
    return lambda: key.sign(message)


def _ml_dsa_in_process(message: bytes) -> Callable[[], object]:
    seed, _public_key = crypto.generate_keypair()
    return lambda: crypto.sign(seed, message)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--message-bytes", type=int, default=512)
    arguments = parser.parse_args()
    reason = softhsm_missing()
    if reason:
        sys.exit(f"cannot run: {reason}")
    message = os.urandom(arguments.message_bytes)

    with tempfile.TemporaryDirectory(prefix="softhsm-bench-") as directory:
        token = softhsm_token_create(Path(directory), label="bench", pin="bench-pin", so_pin="bench-so-pin")
        from signer.backends.pkcs11 import Pkcs11Backend  # after SOFTHSM2_CONF points at the new token

        backend = Pkcs11Backend(token.module_path, token.label, token.pin)
        try:
            print(f"{os.cpu_count()} CPUs, {arguments.message_bytes}-byte messages, {arguments.seconds} s a case")
            print(f"{'algorithm':<10} {'threads':>7} {'PKCS#11 /s':>12} {'in process /s':>14} {'ratio':>7}")
            cases = {"es256": _es256_in_process, "ed25519": _ed25519_in_process}
            for algorithm, in_process in cases.items():
                reference = backend.generate(algorithm, f"bench {algorithm}").reference
                in_process_sign = in_process(message)
                for threads in THREAD_COUNTS:
                    token_rate = _rate(lambda a=algorithm, r=reference: backend.sign(r, a, message), threads,
                                       arguments.seconds)
                    process_rate = _rate(in_process_sign, threads, arguments.seconds)
                    print(f"{algorithm:<10} {threads:>7} {token_rate:>12,.0f} {process_rate:>14,.0f} "
                          f"{token_rate / process_rate:>7.2f}")
            ml_dsa_sign = _ml_dsa_in_process(message)
            for threads in THREAD_COUNTS:
                process_rate = _rate(ml_dsa_sign, threads, arguments.seconds)
                print(f"{'ml-dsa-65':<10} {threads:>7} {'(no token)':>12} {process_rate:>14,.0f} {'':>7}")
        finally:
            backend.close()


if __name__ == "__main__":
    main()
