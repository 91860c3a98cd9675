"""POST /v1/auth/forgot-password for a known and an unknown email: does the answer time tell them apart?

Both take at least accounts.services.auth.ENUMERATION_TIME_FLOOR (tests/accounts/test_email_flows.py checks
that floor, a bound a busy machine cannot break); how close the two stay is a timing, printed here. Runs the
whole Django stack with the test client on a throwaway SQLite database (tests.settings, mail kept in memory).

    nice -n 10 .venv/bin/python bench/enumeration_floor.py [--rounds 20]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.pop("DATABASE_URL", None)
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment
    from rest_framework.test import APIClient

    from accounts.services.auth import ENUMERATION_TIME_FLOOR
    from tests import factories

    setup_test_environment()
    connection.creation.create_test_db(verbosity=0)
    owner = factories.make_user(org=factories.make_org(plan="free"), role="owner")
    client = APIClient()
    seconds: dict[str, list[float]] = {"known": [], "unknown": []}
    for _ in range(args.rounds):
        for label, email in (("known", owner.email), ("unknown", "ghost@example.com")):
            started = time.perf_counter()
            client.post("/v1/auth/forgot-password", {"email": email}, format="json")
            seconds[label].append(time.perf_counter() - started)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; floor {ENUMERATION_TIME_FLOOR} s; "
          f"{args.rounds} requests each")
    for label, values in seconds.items():
        print(f"{label:8} median {statistics.median(values):.3f} s  min {min(values):.3f}  max {max(values):.3f}")
    gaps = [abs(a - b) for a, b in zip(seconds["known"], seconds["unknown"], strict=True)]
    print(f"gap      median {statistics.median(gaps):.3f} s  max {max(gaps):.3f}")


if __name__ == "__main__":
    main()
