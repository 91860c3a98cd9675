"""A real S3 endpoint over HTTP for the job storage tests: moto's server mode (ThreadedMotoServer) on a free
port of 127.0.0.1, in a thread of the test process. The storage talks to it as to MinIO or R2: boto3,
SigV4, HTTP, S3's XML; a worker process reaches it by its URL. What it cannot tell: another service's
quirks (which request checksums it accepts, its listing's consistency), and timing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import boto3
from moto.server import ThreadedMotoServer

from tests.log_scan import register_secret

REGION = "us-east-1"


@dataclass(frozen=True)
class S3Endpoint:
    url: str
    bucket: str
    access_key: str
    secret_key: str

    def env(self) -> dict[str, str]:
        """boto3's credentials, as the environment gives them to a deployment's processes."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}

    def settings(self, prefix: str) -> dict[str, str]:
        return {"JOB_STORAGE_URL": f"s3://{self.bucket}/{prefix}", "JOB_STORAGE_S3_ENDPOINT_URL": self.url,
                "JOB_STORAGE_S3_REGION": REGION}

    def client(self):
        return boto3.session.Session().client("s3", endpoint_url=self.url, region_name=REGION,
                                              aws_access_key_id=self.access_key,
                                              aws_secret_access_key=self.secret_key)

    def keys(self, prefix: str) -> list[str]:
        """Every object's key under `prefix`, read from the endpoint itself."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return sorted(entry["Key"] for page in pages for entry in page.get("Contents", []))

    def uploads(self, prefix: str) -> list[str]:
        """The keys of multipart uploads begun under `prefix` and neither completed nor aborted."""
        answer = self.client().list_multipart_uploads(Bucket=self.bucket, Prefix=prefix)
        return [upload["Key"] for upload in answer.get("Uploads", [])]


@contextmanager
def s3_endpoint() -> Iterator[S3Endpoint]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        secret = f"test-secret-{uuid.uuid4().hex}"
        register_secret(secret)  # the log scan fails the run if any log line shows it
        endpoint = S3Endpoint(f"http://{host}:{port}", f"job-files-{uuid.uuid4().hex[:8]}",
                              f"TESTKEY{uuid.uuid4().hex[:12].upper()}", secret)
        endpoint.client().create_bucket(Bucket=endpoint.bucket)
        yield endpoint
    finally:
        server.stop()
