"""End-to-end time of POST /v1/sign and POST /v1/verify for a 12-megapixel JPEG, in process.

The photo is scikit-image's astronaut scaled to 4000 x 3000 and saved at quality 90. Each request runs
through the whole stack (Django, DRF, the codecs, ML-DSA-65, PostgreSQL) with the Django test client.

    .venv/bin/python bench/sign_verify.py [--runs 5] [--megapixels 12]
"""

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve


def photo(megapixels: float) -> bytes:
    from PIL import Image
    from skimage import data

    width = int((megapixels * 1e6 * 4 / 3) ** 0.5)
    image = Image.fromarray(data.astronaut()).resize((width, width * 3 // 4), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--megapixels", type=float, default=12)
    parser.add_argument("--database-url", default=serve.DEFAULT_DATABASE_URL)
    args = parser.parse_args()

    serve.django_in_process(serve.prepared_database(args.database_url, ALLOWED_HOSTS="testserver"))
    from rest_framework.test import APIClient

    from tests import factories

    org = factories.make_org(plan="enterprise", name="bench-sign")
    generator = factories.make_generator(org=org, formats=["image"])
    signer = APIClient()
    signer.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.make_api_key(org=org)}")
    verifier = APIClient()
    content = photo(args.megapixels)

    sign_times, verify_times = [], []
    for _ in range(args.runs + 1):  # the first run warms imports and caches; it is not counted
        started = time.perf_counter()
        signed = signer.post("/v1/sign", {"content": io.BytesIO(content), "model": "bench",
                                          "generator_id": str(generator.pk)}, format="multipart")
        sign_times.append(time.perf_counter() - started)
        assert signed.status_code == 201, signed.content[:200]
        started = time.perf_counter()
        result = verifier.post("/v1/verify", {"content": io.BytesIO(signed.content)}, format="multipart").json()
        verify_times.append(time.perf_counter() - started)
        assert result["authentic"] and result["confidence"] == "high", result
    print(f"{args.megapixels:g}-megapixel JPEG ({len(content) / 1e6:.1f} MB), {args.runs} runs\n")
    print("| request | median s | worst s |")
    print("|---|---|---|")
    for label, times in (("POST /v1/sign", sign_times[1:]), ("POST /v1/verify", verify_times[1:])):
        print(f"| {label} | {statistics.median(times):.3f} | {max(times):.3f} |")


if __name__ == "__main__":
    main()
