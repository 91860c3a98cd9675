"""Offline verification by the client of a 12-megapixel JPEG, and the log proof check within it.

The photo is scikit-image's astronaut scaled to 4000 x 3000 (JPEG quality 90), signed client-side; its
record is entry 777,777 of a synthetic RFC 9162 log of 1,000,000 entries whose checkpoint carries an
Ed25519 and an ML-DSA-65 signature (the contract's shape; no service or database is involved).
Printed, as medians: `verify_offline` in process (content hash, ML-DSA-65 signature, checkpoint
signatures, inclusion proof), the inclusion proof alone, the checkpoint signatures alone, and the whole
`svc verify --offline` command in a fresh interpreter (start-up and imports included).
Targets: the CLI under 300 ms, the proof check under 5 ms.

    .venv/bin/python bench/client_offline.py [--runs 15] [--megapixels 12] [--leaves 1000000]
"""

import argparse
import base64
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "client"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.sign_verify import photo
from svc_client import PinnedKeys, SigningKey, record_sign, verify_offline
from svc_client.checkpoint import checkpoint_verify, log_keys_from_document
from svc_client.merkle import leaf_hash, verify_inclusion
from svc_client.offline import log_entry
from tests.client.fake_log import log_keys, signed_checkpoint

ROOT = Path(__file__).resolve().parent.parent
INDEX = 777_777


def _median_ms(function, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _record(data: bytes, key: SigningKey) -> dict:
    generator_id = str(uuid.uuid4())
    draft = record_sign(key=key, generator_id=generator_id, model="bench", data=data)
    return {"record_id": str(uuid.uuid4()), **draft.signed_payload, "signed_payload": draft.signed_payload,
            "signature": base64.b64encode(draft.signature).decode(), "signature_algorithm": "ml-dsa-65",
            "kid": key.kid, "signed_at": "2026-11-22T12:00:00.000000Z"}


def _tree(leaves: list[bytes], index: int) -> tuple[bytes, list[bytes]]:
    """Root and inclusion path, level by level: an unpaired right node moves up unhashed, which is
    exactly RFC 9162's split at the largest power of two."""
    path, level = [], leaves
    while len(level) > 1:
        if index ^ 1 < len(level):
            path.append(level[index ^ 1])
        level = [hashlib.sha256(b"\x01" + level[i] + level[i + 1]).digest() if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
        index >>= 1
    return level[0], path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--megapixels", type=float, default=12)
    parser.add_argument("--leaves", type=int, default=1_000_000)
    args = parser.parse_args()

    data, key = photo(args.megapixels), SigningKey.generate()
    record = _record(data, key)
    leaves = [leaf_hash(i.to_bytes(8, "big")) for i in range(args.leaves)]
    leaves[INDEX] = leaf_hash(log_entry(record))
    root, path = _tree(leaves, INDEX)
    keys = log_keys("bench.example/log")
    note = signed_checkpoint("bench.example/log", args.leaves, root, keys)
    record["log"] = {"status": "integrated", "index": INDEX, "tree_size": args.leaves, "checkpoint": note,
                     "inclusion_proof": [base64.b64encode(h).decode() for h in path]}
    pinned = PinnedKeys(generator_id=record["generator_id"], keys={key.kid: key.public_key})
    log_document = {"keys": [k.vkey for k in keys]}
    pinned_log = log_keys_from_document(log_document)
    assert verify_offline(data, record, pinned, log_keys=pinned_log).authentic

    whole = _median_ms(lambda: verify_offline(data, record, pinned, log_keys=pinned_log), args.runs)
    proof = _median_ms(lambda: verify_inclusion(leaf_hash(log_entry(record)), INDEX, args.leaves, path, root),
                       args.runs * 10)
    signatures = _median_ms(lambda: checkpoint_verify(note, pinned_log), args.runs)
    cli, cli_cpu, imports = _cli_ms(data, record, pinned, log_document, args.runs)
    print(f"{args.megapixels:g} MP JPEG, {len(data) / 1e6:.1f} MB; log of {args.leaves:,} entries, "
          f"proof of {len(path)} hashes; medians of {args.runs} runs")
    print(f"verify_offline in process (hash, signature, checkpoint, proof): {whole:7.1f} ms")
    print(f"  inclusion proof check:                                       {proof:7.3f} ms")
    print(f"  checkpoint signatures (Ed25519 + ML-DSA-65):                 {signatures:7.3f} ms")
    print(f"svc verify --offline, fresh interpreter (start-up + imports):  {cli:7.1f} ms wall, {cli_cpu:.1f} ms CPU")
    print(f"  its imports (-X importtime, one run): {imports['ms']:.1f} ms; third-party packages loaded: "
          f"{', '.join(imports['packages']) or 'none'}")


def _cli_ms(data: bytes, record: dict, pinned: PinnedKeys, log_document: dict, runs: int) -> tuple[float, float, dict]:
    """Median wall time of the command, its median CPU time (user + system: steady on a busy machine), and what
    one run imports (`python -X importtime`: the time of every import, and the third-party packages)."""
    with tempfile.TemporaryDirectory() as folder:
        files = {"photo.jpg": data, "record.json": json.dumps(record).encode(),
                 "keys.json": json.dumps({"generator_id": pinned.generator_id, "public_keys": [
                     {"kid": kid, "algorithm": "ml-dsa-65", "key": base64.b64encode(raw).decode()}
                     for kid, raw in pinned.keys.items()]}).encode(),
                 "log-keys.json": json.dumps(log_document).encode()}
        for name, content in files.items():
            Path(folder, name).write_bytes(content)
        command = [sys.executable, "-m", "svc_client", "--url", "http://127.0.0.1:9", "verify", "photo.jpg",
                   "--offline", "--keys", "keys.json", "--record", "record.json", "--log-keys", "log-keys.json"]
        env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'client'}"}

        cpu: list[float] = []

        def run() -> None:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(command, cwd=folder, env=env, check=True, capture_output=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
        wall = _median_ms(run, runs)
        traced = subprocess.run([sys.executable, "-X", "importtime", *command[1:]], cwd=folder, env=env, check=True,
                                capture_output=True, text=True)
        return wall, statistics.median(cpu), _imports(traced.stderr)


def _imports(trace: str) -> dict:
    """Total self time of every import in an -X importtime trace, and the top-level packages from site-packages."""
    rows = [line.split("|") for line in trace.splitlines() if line.startswith("import time:") and "self" not in line]
    names = {row[2].strip() for row in rows}
    site = {name.split(".")[0] for name in names if name.split(".")[0] in _THIRD_PARTY}
    return {"ms": sum(int(row[0].split(":")[1]) for row in rows) / 1000, "packages": sorted(site)}


# The project's dependencies a client could load (pyproject.toml and client/pyproject.toml).
_THIRD_PARTY = {"numpy", "PIL", "lxml", "cv2", "av", "soundfile", "scipy", "pypdf", "cbor2", "requests", "urllib3",
                "cryptography", "imagehash", "skimage"}


if __name__ == "__main__":
    main()
