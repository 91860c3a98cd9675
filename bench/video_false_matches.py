"""Whether an unrelated video is ever answered with a signed clip's record, through the service's own matching.

1. The store: generated scenes of every kind of tests/video_scenes.py (moving shapes, flat scenes, fades,
   high motion, dark scenes, 9:16 portrait, 4K downscaled, variable frame rate, gradients, text-like
   patterns, noise), --store of them (seeds from 1000), 4.2 s each, signed through POST /v1/sign (which
   stores each clip's set of frame pHashes).
2. False matches: --clips unrelated scenes of the same kinds (seeds from 0), 1 s each, verified through
   POST /v1/verify; a false match is an answer that names any record. Also printed: how many had no
   fingerprint to look up (flat or low-information first frame), and the nearest stored value of the
   others (`verification.selectors.nearest_fingerprint` with the lookup's distance lifted), the margin.
3. Recovery: each stored clip re-encoded at CRF 28, scaled to 90 lines and cut (first 2 s, re-encoded),
   verified without its token: found when the answer names the clip's own record.

    .venv/bin/python bench/video_false_matches.py [--store 44] [--clips 550]
        [--database-url postgres://postgres@127.0.0.1:5432/bench]

Each run signs into the database it is given: give it an empty one, or earlier runs' clips are in the store.
"""

from __future__ import annotations

import argparse
import collections
import io
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve

STORE_SECONDS = 4.2  # past the last offset of the stored set (4 s)
COPIES = {"re-encode CRF 28": {"crf": 28}, "scale to 90 lines": {"height": 90, "crf": 23},
          "cut first 2 s": {"start": 2.0, "crf": 23}}


def run(store_count: int, clip_count: int) -> None:
    from rest_framework.test import APIClient

    from tests import factories, video, video_scenes

    org = factories.make_org(plan="enterprise", name=f"bench-video-fp-{time.time_ns()}")
    generator = factories.make_generator(org=org, formats=["video"])
    signer, verifier = APIClient(), APIClient()
    signer.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.make_api_key(org=org)}")

    def answer(content: bytes) -> str | None:
        response = verifier.post("/v1/verify", {"content": io.BytesIO(content)}, format="multipart")
        assert response.status_code == 200, response.content[:300]
        return response.json()["record_id"]

    started = time.perf_counter()
    stored = {}
    for scene in video_scenes.scenes(store_count, first_seed=1000):
        original = scene.clip(STORE_SECONDS)
        response = signer.post("/v1/sign", {"content": io.BytesIO(original), "model": "bench",
                                            "generator_id": str(generator.pk)}, format="multipart")
        assert response.status_code == 201, response.content[:300]
        stored[scene] = (original, response["X-Service-Record-Id"])
    print(f"store: {len(stored)} clips signed in {time.perf_counter() - started:.0f} s", flush=True)

    started = time.perf_counter()
    matched, unlooked, nearest = collections.Counter(), collections.Counter(), []
    kinds = collections.Counter()
    for scene in video_scenes.scenes(clip_count, first_seed=0):
        clip = scene.clip(1.0)
        kinds[scene.kind] += 1
        if answer(clip) is not None:
            matched[scene.kind] += 1
        distance = _nearest_distance(clip)
        if distance is None:
            unlooked[scene.kind] += 1
        else:
            nearest.append((distance, scene.kind, scene.seed))
    print(f"unrelated: {sum(kinds.values())} clips verified in {time.perf_counter() - started:.0f} s\n")
    print("| kind | clips | false matches | nothing to look up |")
    print("|---|---|---|---|")
    for kind in video_scenes.KINDS:
        print(f"| {kind} | {kinds[kind]} | {matched[kind]} | {unlooked[kind]} |")
    print(f"| all | {sum(kinds.values())} | **{sum(matched.values())}** | {sum(unlooked.values())} |")
    closest = sorted(nearest)[:8]
    print(f"\nnearest stored value of the looked-up clips (bits; the lookup takes 7): {closest}\n")

    found = collections.Counter()
    for original, record_id in stored.values():
        for name, options in COPIES.items():
            found[name] += answer(video.reencode(original, "mp4", **options)) == record_id
    fingerprinted = sum(1 for original, _ in stored.values() if _nearest_distance(original) is not None)
    print(f"| copy of a stored clip | found of {len(stored)} ({fingerprinted} with a first-frame fingerprint) |")
    print("|---|---|")
    for name in COPIES:
        print(f"| {name} | {found[name]} |")


def _nearest_distance(content: bytes) -> int | None:
    """Bits from the clip's first-frame fingerprint(s) to the nearest stored value, any distance; None when the
    clip has none. A full scan: the store is small."""
    from media_codecs import detect
    from provenance.models import Fingerprint

    codec = detect(content)
    values = codec.query_fingerprints(content)
    if not values:
        return None
    stored = list(Fingerprint.objects.filter(kind="video-phash").values_list("value", flat=True))
    return min(((int(value, 16) ^ (other & (1 << 64) - 1)).bit_count() for value in values for other in stored),
               default=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=int, default=44)
    parser.add_argument("--clips", type=int, default=550)
    parser.add_argument("--database-url", default=serve.DEFAULT_DATABASE_URL)
    args = parser.parse_args()
    env = serve.prepared_database(args.database_url, ALLOWED_HOSTS="testserver", VERIFY_RATE_PER_MINUTE="100000000")
    load = os.getloadavg()[0]
    serve.django_in_process(env)
    run(args.store, args.clips)
    print(f"\nload average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end (2 cores)")


if __name__ == "__main__":
    main()
