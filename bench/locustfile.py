"""The mixed workload of bench/load.py, for locust: 70% verify, 20% records, 5% sign, 5% reads.

Run by bench/load.py, which prepares the organization, keys, files and record bodies and passes
them in the JSON file named by LOAD_SETUP. Every user is one keep-alive connection that sends its
next request as soon as the last one is answered (no think time). Any non-2xx is a failure.
"""

import itertools
import json
import os
import random
import sys
from pathlib import Path

from locust import FastHttpUser, constant, task

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.load import multipart_body

with open(os.environ["LOAD_SETUP"]) as setup_file:
    SETUP = json.load(setup_file)
with open(SETUP["signed_jpeg"], "rb") as jpeg_file:
    SIGNED_JPEG = jpeg_file.read()
with open(SETUP["plain_jpeg"], "rb") as jpeg_file:
    PLAIN_JPEG = jpeg_file.read()
AUTH = {"Authorization": f"Bearer {SETUP['api_key']}"}
RECORD_BODIES = itertools.cycle(SETUP["record_bodies"])


class MixedWorkload(FastHttpUser):
    wait_time = constant(0)

    @task(70)
    def verify(self) -> None:
        body, headers = multipart_body({}, SIGNED_JPEG)
        with self.client.post("/v1/verify", data=body, headers=headers, name="POST /v1/verify",
                              catch_response=True) as response:
            if response.status_code == 200:
                result = response.json()
                if any(result.get(name) != value for name, value in SETUP["verify_expect"].items()):
                    response.failure(f"verification answered {result}")

    @task(20)
    def record(self) -> None:
        self.client.post("/v1/records", data=next(RECORD_BODIES), name="POST /v1/records",
                         headers={**AUTH, "Content-Type": "application/json"})

    @task(5)
    def sign(self) -> None:
        body, headers = multipart_body({"generator_id": SETUP["generator_id"], "model": "load-model"}, PLAIN_JPEG)
        self.client.post("/v1/sign", data=body, headers={**AUTH, **headers}, name="POST /v1/sign")

    @task(5)
    def read(self) -> None:
        record_id = random.choice(SETUP["record_ids"])
        self.client.get(f"/v1/records/{record_id}", headers=AUTH, name="GET /v1/records/:id")
