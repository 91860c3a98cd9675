"""Job files in an S3-compatible bucket (AWS S3, MinIO, Cloudflare R2, Ceph's RADOS Gateway), through
boto3: settings.JOB_STORAGE_URL = "s3://<bucket>/<prefix>", JOB_STORAGE_S3_ENDPOINT_URL for a service
other than AWS, JOB_STORAGE_S3_REGION. Credentials come from boto3's own chain (AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY, AWS_PROFILE, a web identity token, an instance or task role): never a setting of
ours, never logged.

    <prefix>/<job_id>/in-<position>                the uploaded file, deleted when the job finishes
    <prefix>/<job_id>/out-<position>-<attempt>     signed files; the one its item names is kept 24 hours

Memory. An upload goes from the request's temporary file to the bucket one part at a time
(`upload_fileobj`, multipart past PART_SIZE, no transfer threads): a web process holds at most one
8 MiB part of it, whatever the file's size. A download is read from the object's body in the response's
own chunks (jobs.api streams it through the authenticated route), never whole.

Exactly once without a rename. S3 has no rename, and a copy then delete is two requests that a killed
worker can split; a conditional put of one final key (If-None-Match) would need the loser to tell an
orphan from a committed file. Instead every attempt at an item writes its signed file under a key of its
own (`output_stage`: the attempt is a random UUID), outside any transaction, and `output_commit` only
returns that key's name, which the runner records on the item in the transaction that marks it done,
under the item row's lock. The recorded name is the only way to the file: a second run of an item that a
first run finished finds it done and discards its own object, and a run that lost its lock (a worker cut
off from the database, still writing) writes only its own key, which no item names, so it can never
replace the file a record was given. Nothing on S3 happens inside the transaction.

What a killed process leaves: an attempt's object that no item names (deleted with the job's files, 24
hours after the job ended, or by `staged_discard` when its run survives), and an incomplete multipart
upload of a web process killed mid-upload (aborted with the job's inputs, or as an orphan by the cleanup:
`job_ids_older_than` counts uploads in progress as files).
"""

import contextlib
import functools
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import boto3
from boto3.exceptions import Boto3Error
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.core.files.uploadedfile import UploadedFile

from jobs.storage.base import JobStorage, OutputFile, StagedOutput, StorageUnavailable

PART_SIZE = 8 * 1024 * 1024  # S3 wants parts of 5 MiB at least (but the last)
# One part in memory at a time: parts are read and sent in turn, not by a pool of threads.
UPLOAD = TransferConfig(multipart_threshold=PART_SIZE, multipart_chunksize=PART_SIZE, use_threads=False)
DELETE_BATCH = 1000  # DeleteObjects' limit
MISSING = {"NoSuchKey", "404", "NotFound"}


def _translated(method):
    """The method with boto3's failures (no connection, a timeout, an error answer) as StorageUnavailable."""

    @functools.wraps(method)
    def translated(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (Boto3Error, BotoCoreError, ClientError) as error:  # Boto3Error: a failed transfer
            raise StorageUnavailable(f"S3 {method.__name__}: {type(error).__name__}") from error

    return translated


def client_config(*, endpoint_url: str) -> Config:
    return Config(
        retries={"mode": "standard"}, connect_timeout=5, read_timeout=60,
        # A named endpoint (MinIO, R2, Ceph) is addressed by path: its buckets have no DNS names of their own.
        s3={"addressing_style": "path" if endpoint_url else "auto"},
        # Checksums only where S3 requires them: the newer defaults (CRC32 on every request) are refused by
        # some S3-compatible services.
        request_checksum_calculation="when_required", response_checksum_validation="when_required")


class S3Storage(JobStorage):
    def __init__(self, *, bucket: str, prefix: str, client):
        self.bucket, self.client = bucket, client
        self.prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""

    @classmethod
    def from_url(cls, url: str, *, endpoint_url: str = "", region: str = "") -> "S3Storage":
        """The storage named by "s3://<bucket>/<prefix>", with a client of its own."""
        parts = urlsplit(url)
        client = boto3.session.Session().client(
            "s3", endpoint_url=endpoint_url or None, region_name=region or None,
            config=client_config(endpoint_url=endpoint_url))
        return cls(bucket=parts.netloc, prefix=parts.path, client=client)

    def _key(self, job_id: uuid.UUID, name: str = "") -> str:
        return f"{self.prefix}{job_id}/{name}"

    @_translated
    def input_save(self, job_id: uuid.UUID, position: int, upload: UploadedFile) -> None:
        upload.seek(0)
        self.client.upload_fileobj(upload, self.bucket, self._key(job_id, f"in-{position}"), Config=UPLOAD)

    @_translated
    def input_read(self, job_id: uuid.UUID, position: int) -> bytes | None:
        response = self._body(self._key(job_id, f"in-{position}"))
        if response is None:
            return None
        with contextlib.closing(response["Body"]) as body:
            return body.read()

    @_translated
    def output_stage(self, job_id: uuid.UUID, position: int, data: bytes) -> StagedOutput:
        staged = StagedOutput(job_id, position, f"out-{position}-{uuid.uuid4().hex}")
        self.client.put_object(Bucket=self.bucket, Key=self._key(job_id, staged.name), Body=data)
        return staged

    def output_commit(self, staged: StagedOutput) -> str:
        staged.is_committed = True  # the item's row, which records the name, makes it the item's file
        return staged.name

    @_translated
    def staged_discard(self, staged: StagedOutput) -> None:
        if not staged.is_committed:
            self.client.delete_object(Bucket=self.bucket, Key=self._key(staged.job_id, staged.name))

    @_translated
    def output_open(self, job_id: uuid.UUID, position: int, name: str) -> OutputFile | None:
        if not name:
            return None
        response = self._body(self._key(job_id, name))
        if response is None:
            return None
        return OutputFile(response["Body"], response["ContentLength"])

    def _body(self, key: str) -> dict | None:
        """GetObject's answer (its body not yet read), None when there is no such object."""
        try:
            return self.client.get_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in MISSING:
                return None
            raise

    @_translated
    def inputs_delete(self, job_id: uuid.UUID) -> None:
        keys = [key for key, _ in self._objects(self._key(job_id)) if key.rsplit("/", 1)[1].startswith("in-")]
        self._delete(keys)
        self._abort_uploads(self._key(job_id))

    @_translated
    def job_files_delete(self, job_id: uuid.UUID) -> None:
        self._delete(key for key, _ in self._objects(self._key(job_id)))
        self._abort_uploads(self._key(job_id))

    @_translated
    def job_ids_older_than(self, seconds: float) -> Iterator[uuid.UUID]:
        """Job ids whose newest object, or upload in progress, is over `seconds` old."""
        newest: dict[uuid.UUID, datetime] = {}
        uploads = [(upload["Key"], upload["Initiated"]) for upload in self._uploads(self.prefix)]
        for key, written in [*self._objects(self.prefix), *uploads]:
            try:
                job_id = uuid.UUID(key[len(self.prefix):].split("/", 1)[0])
            except ValueError:
                continue  # not a job's: someone else's object under the prefix
            newest[job_id] = max(written, newest.get(job_id, written))
        horizon = datetime.now(UTC) - timedelta(seconds=seconds)
        return iter([job_id for job_id, written in newest.items() if written < horizon])

    def _objects(self, prefix: str) -> Iterator[tuple[str, datetime]]:
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            for entry in page.get("Contents", []):
                yield entry["Key"], entry["LastModified"]

    def _uploads(self, prefix: str) -> Iterator[dict]:
        """Multipart uploads begun and neither completed nor aborted."""
        for page in self.client.get_paginator("list_multipart_uploads").paginate(Bucket=self.bucket, Prefix=prefix):
            yield from page.get("Uploads", [])

    def _delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        for start in range(0, len(keys), DELETE_BATCH):
            objects = [{"Key": key} for key in keys[start:start + DELETE_BATCH]]
            self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": objects, "Quiet": True})

    def _abort_uploads(self, prefix: str) -> None:
        """Abort the multipart uploads a web process killed mid-upload left: their parts cost storage."""
        for upload in list(self._uploads(prefix)):
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"])
