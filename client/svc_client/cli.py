"""`svc`: the command line of the client package.

Exit codes: 0 authentic (or the command did what it said), 1 not authentic (a failed check, a fork),
2 usage error (bad arguments, unreadable files), 3 service error (an error answer, or unreachable).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from media_codecs import CodecError, open_media
from svc_client import __version__
from svc_client.checkpoint import CheckpointError, LogKey, checkpoint_verify, load_log_keys, log_keys_from_document
from svc_client.errors import ForkDetected, ServiceError, ServiceUnavailable
from svc_client.keys import KeyFileError, PinnedKeys, SigningKey
from svc_client.offline import OfflineResult, check_log, record_id_of_token, verify_offline
from svc_client.progress import ProgressLine
from svc_client.signing import (
    NO_WATERMARK,
    EmbeddingError,
    RecordDraft,
    content_family,
    content_phash,
    embed_token,
    record_sign,
    token_carrier,
)
from svc_client.summary import offline_text, verdict_text

if TYPE_CHECKING:
    from svc_client.client import Client, RecordCreated

EXIT_OK, EXIT_NOT_AUTHENTIC, EXIT_USAGE, EXIT_SERVICE = 0, 1, 2, 3
DEFAULT_URL = "http://127.0.0.1:8000"


class UsageError(Exception):
    """Arguments or local files the command cannot use (exit 2)."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    out = Output(json_mode=args.json, quiet=args.quiet)
    try:
        return args.run(args, out)
    except (UsageError, KeyFileError) as error:
        out.error(str(error))
        return EXIT_USAGE
    except (ForkDetected, CheckpointError) as error:
        out.error(str(error), loud=isinstance(error, ForkDetected))
        return EXIT_NOT_AUTHENTIC
    except ServiceError as error:
        out.error(f"the service refused: {error.code} ({error.status}): {error.message}", code=error.code)
        return EXIT_SERVICE
    except ServiceUnavailable as error:
        out.error(f"the service cannot be reached: {error}", code="service_unavailable")
        return EXIT_SERVICE


class Output:
    def __init__(self, *, json_mode: bool, quiet: bool):
        self.json_mode, self.quiet = json_mode, quiet

    def result(self, document: dict[str, Any], text: str) -> None:
        print(json.dumps(document, indent=2) if self.json_mode else text)

    def progress(self, label: str, unit: str = "bytes") -> ProgressLine:
        return ProgressLine(label, enabled=not (self.json_mode or self.quiet), unit=unit)

    def error(self, message: str, *, code: str | None = None, loud: bool = False) -> None:
        if self.json_mode:
            print(json.dumps({"error": code or "failed", "message": message}))
        prefix = "FORK DETECTED: " if loud else "svc: "
        print(prefix + message, file=sys.stderr)


def _client(args: argparse.Namespace, *, needs_key: bool = False) -> Client:
    # Imported here: offline verification never loads the HTTP stack (a tenth of its time).
    from svc_client.client import Client

    if needs_key and not args.api_key:
        raise UsageError("this command needs an API key: --api-key or SVC_API_KEY")
    return Client(args.url, args.api_key, timeout=args.timeout)


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None


def _read_json(path: str) -> dict[str, Any]:
    try:
        document = json.loads(_read(path))
    except ValueError:
        raise UsageError(f"{path} is not JSON") from None
    if not isinstance(document, dict):
        raise UsageError(f"{path} is not a JSON object")
    return document


def _log_keys(path: str) -> list[LogKey]:
    """Pinned log keys; a file that holds none is a usage error, not a failed check."""
    try:
        return load_log_keys(path)
    except CheckpointError as error:
        raise UsageError(f"{path}: {error}") from None


def _write(path: str | Path, data: bytes) -> None:
    try:
        Path(path).write_bytes(data)
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror}") from None


# --- commands --------------------------------------------------------------------------------------------

def cmd_keygen(args: argparse.Namespace, out: Output) -> int:
    key = SigningKey.generate(kid=args.kid)
    try:
        key.save(args.out)
    except FileExistsError:
        raise UsageError(f"{args.out} exists; a key file is never overwritten") from None
    out.result({"kid": key.kid, "public_key": key.public_key_b64, "key_file": args.out},
               f"wrote {args.out} (kid {key.kid}); register it with: svc register NAME --key {args.out}")
    return EXIT_OK


def cmd_register(args: argparse.Namespace, out: Output) -> int:
    if bool(args.key) == args.server_managed:
        raise UsageError("give --key KEYFILE (client-managed) or --server-managed")
    key = SigningKey.load(args.key) if args.key else None
    formats = args.formats.split(",") if args.formats else None
    generator = _client(args, needs_key=True).generator_register(
        name=args.name, public_key=key.public_key_b64 if key else None, kid=key.kid if key else None,
        supported_formats=formats, c2pa_signing=args.c2pa_signing)
    out.result(generator, f"generator {generator['generator_id']} ({generator.get('mode', 'client')}-managed)")
    return EXIT_OK


def cmd_sign(args: argparse.Namespace, out: Output) -> int:
    if len(args.files) > 1 and args.output:
        raise UsageError("--output names one file; sign several into --out-dir")
    client = _client(args, needs_key=True)
    if args.key:
        return _sign_client_managed(args, out, client, SigningKey.load(args.key))
    targets = _targets(args, args.files)  # checked before any upload: nothing is signed for nothing
    results = []
    for path, target in zip(args.files, targets, strict=True):
        signed = client.sign(_read(path), generator_id=args.generator, model=args.model, family=args.format,
                             filename=Path(path).name, progress=out.progress(f"uploading {path}"), c2pa=args.c2pa)
        _write_new(target, signed.data, force=args.force)
        results.append({"file": path, "signed_file": str(target), "record_id": signed.record_id,
                        "token": signed.token, "format": signed.format})
    out.result({"results": results}, "\n".join(f"{r['file']} -> {r['signed_file']}: record {r['record_id']}"
                                               for r in results))
    return EXIT_OK


def _sign_client_managed(args: argparse.Namespace, out: Output, client: Client, key: SigningKey) -> int:
    """Hash and sign each file locally, submit the records, then write each file with its token embedded.

    A format with no place for a token (plain text, content no codec reads) is signed all the same and
    no copy is written: its token is printed, to keep beside the file (verification also finds the
    unchanged file by its content hash)."""
    carriers = [_carries_token(path) for path in args.files]
    targets = _targets(args, [path for path, carries in zip(args.files, carriers, strict=True) if carries])
    target_of = dict(zip([path for path, carries in zip(args.files, carriers, strict=True) if carries], targets,
                         strict=True))
    drafts: list[RecordDraft] = []
    hashing = out.progress("hashing and signing", unit="files")
    for done, path in enumerate(args.files, 1):
        data = _read(path)
        try:
            drafts.append(record_sign(key=key, generator_id=args.generator, model=args.model, data=data,
                                      watermark_id=args.watermark_id, format=content_family(data),
                                      phash=_phash(path, data) if args.phash else None))
        except CodecError as error:  # over the service's limits
            raise UsageError(f"cannot sign {path}: {error}") from None
        hashing(done, len(args.files))
    created: list[RecordCreated] = []
    try:
        if args.batch:
            created = client.records_submit(drafts, on_batch=out.progress("submitting", unit="records"))
        else:
            submitting = out.progress("submitting", unit="records")
            for draft in drafts:
                created.append(client.record_submit(draft))
                submitting(len(created), len(drafts))
    except ServiceError as error:
        created = created or error.stored
        if created:  # what is stored must not be lost with the error
            print("stored before the failure: " + ", ".join(
                f"{path} record {c.record_id}" for path, c in zip(args.files, created, strict=False)), file=sys.stderr)
        raise
    results, failed = [], []
    for path, c, d in zip(args.files, created, drafts, strict=True):
        result = {"file": path, "record_id": c.record_id, "token": c.token, "content_hash": d.content_hash,
                  "phash": d.phash, "signed_file": None}
        target = target_of.get(path)
        if target is not None:
            try:
                _write_new(target, embed_token(_read(path), c.token, d.content_hash), force=args.force)
                result["signed_file"] = str(target)
            except (EmbeddingError, UsageError) as error:
                result["error"] = str(error)
                failed.append(f"{path}: record {c.record_id} is stored, but its signed copy was not written: "
                              f"{error}; its token is {c.token}")
        results.append(result)
    out.result({"results": results}, "\n".join(_signed_line(r) for r in results))
    for line in failed:  # stderr only: with --json, stdout holds the one results document (each has its error)
        print(f"svc: {line}", file=sys.stderr)
    return EXIT_USAGE if failed else EXIT_OK


def _signed_line(result: dict[str, Any]) -> str:
    if result["signed_file"]:
        return f"{result['file']} -> {result['signed_file']}: record {result['record_id']} token {result['token']}"
    if "error" in result:
        return f"{result['file']}: record {result['record_id']} token {result['token']} (no signed copy)"
    return (f"{result['file']}: record {result['record_id']} token {result['token']} (this format has no place "
            f"for a token: keep the token with the file, and verify with --token)")


def _carries_token(path: str) -> bool:
    try:
        return token_carrier(_read(path)) is not None
    except CodecError as error:  # over the service's limits
        raise UsageError(f"cannot sign {path}: {error}") from None


def _phash(path: str, data: bytes) -> str | None:
    """The service's own fingerprint of an image or video; None, with a warning, when the library that
    decodes the format is not installed or the pictures cannot be decoded (the file is still signed: its
    content hash does not need them)."""
    try:
        return content_phash(data)
    except ImportError as error:
        print(f"svc: {path} is signed without a pHash: decoding it needs {error.name or error} "
              "(pip install 'svc-client[phash]')", file=sys.stderr)
    except CodecError as error:
        print(f"svc: {path} is signed without a pHash: its pictures cannot be decoded ({error})", file=sys.stderr)
    return None


def _targets(args: argparse.Namespace, paths: Sequence[str]) -> list[Path]:
    """Where each signed file goes: --output, or NAME.signed.EXT beside it (or in --out-dir). Refuses an
    existing file (unless --force) and two files written to one place, before anything is signed."""
    targets = [Path(args.output) if args.output else _signed_path(path, args.out_dir) for path in paths]
    seen: set[Path] = set()
    for target in targets:
        if target.resolve() in seen:
            raise UsageError(f"two files would be written to {target}: sign them into separate --out-dir folders")
        seen.add(target.resolve())
        if not target.parent.is_dir():
            raise UsageError(f"{target.parent} is not a folder; nothing was signed")
        if target.exists() and not args.force:
            raise UsageError(f"{target} exists; nothing was signed (--force overwrites it)")
    return targets


def _write_new(path: Path, data: bytes, *, force: bool) -> None:
    """Write `path`; without `force` only when it does not exist yet (a file that appeared since the check
    is kept). With `force` the file is replaced whole, never left half written."""
    try:
        if not force:
            with path.open("xb") as file:  # created here: a failed write removes it below
                try:
                    file.write(data)
                except OSError:
                    path.unlink(missing_ok=True)
                    raise
            return
        temporary = path.with_name(f".{path.name}.svc-{os.getpid()}")
        try:
            temporary.write_bytes(data)
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
    except FileExistsError:
        raise UsageError(f"{path} exists; it was kept (--force overwrites it)") from None
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror}") from None


def _signed_path(path: str, out_dir: str | None) -> Path:
    source = Path(path)
    name = f"{source.stem}.signed{source.suffix}"
    return Path(out_dir) / name if out_dir else source.with_name(name)


def cmd_verify(args: argparse.Namespace, out: Output) -> int:
    if args.offline:
        return _verify_offline(args, out)
    data = _read(args.file)
    verdict = _client(args).verify(data, token=args.token, filename=Path(args.file).name,
                                   progress=out.progress(f"uploading {args.file}"))
    out.result(dict(verdict), verdict_text(dict(verdict)))
    return EXIT_OK if verdict.get("authentic") else EXIT_NOT_AUTHENTIC


def _verify_offline(args: argparse.Namespace, out: Output) -> int:
    if not args.keys:
        raise UsageError("--offline needs --keys PINNED_KEYS (written by: svc keys pin GENERATOR_ID)")
    data = _read(args.file)
    keys = PinnedKeys.load(args.keys)
    record = _record_for(args, data)
    log_keys = _log_keys(args.log_keys) if args.log_keys else None
    checkpoint = _read(args.checkpoint).decode() if args.checkpoint else None
    result = verify_offline(data, record, keys, log_keys=log_keys, pinned_checkpoint=checkpoint)
    return _report(out, result, offline_text(result.authentic, result.reason, record))


def _report(out: Output, result: OfflineResult, verdict: str | None = None) -> int:
    lines = [f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.message}" for c in result.checks]
    lines.append(verdict or ("authentic" if result.authentic else f"NOT authentic: {result.reason}"))
    out.result(result.as_dict(), "\n".join(lines))
    return EXIT_OK if result.authentic else EXIT_NOT_AUTHENTIC


def _record_for(args: argparse.Namespace, data: bytes) -> dict[str, Any]:
    """The record: a file (no call at all), an id, or the token given or carried by the file (one fetch)."""
    if args.record:
        return _read_json(args.record)
    record_id = args.record_id
    if record_id is None:
        token = args.token or _token_in(data)
        if token is None:
            raise UsageError("the file carries no token: give --record FILE, --record-id ID or --token")
        try:
            record_id = record_id_of_token(token)
        except ValueError as error:
            raise UsageError(f"not a token: {error}") from None
    return dict(_client(args).record_get(record_id))


def _token_in(data: bytes) -> str | None:
    try:
        media = open_media(data)
        return media.codec.extract_token(media)
    except CodecError:
        return None


def cmd_record(args: argparse.Namespace, out: Output) -> int:
    record = dict(_client(args).record_get(args.record_id))
    if args.output:
        _write(args.output, json.dumps(record, indent=2).encode())
    out.result(record, json.dumps(record, indent=2) if not args.output else f"wrote {args.output}")
    return EXIT_OK


def cmd_keys_pin(args: argparse.Namespace, out: Output) -> int:
    client = _client(args)
    document = client.keys_get(args.generator_id)
    document["trust_anchors"] = client.trust_anchors()["trust_anchors"]  # what manifests and stamps chain to
    PinnedKeys.from_document(document)  # refuse to pin something offline verification cannot read
    target = args.output or f"keys-{args.generator_id}.json"
    _write(target, json.dumps(document, indent=2).encode())
    kids = ", ".join(key["kid"] for key in document.get("public_keys", []))
    out.result({"pinned": target, **document}, f"pinned the keys of {args.generator_id} ({kids}) in {target}")
    return EXIT_OK


def cmd_log_pin(args: argparse.Namespace, out: Output) -> int:
    client = _client(args)
    document = client.log_keys()
    keys = log_keys_from_document(document)
    target = args.output or "log-keys.json"
    _write(target, json.dumps(document, indent=2).encode())
    checkpoint = checkpoint_verify(client.log_checkpoint(), keys)
    if args.checkpoint:
        _write(args.checkpoint, checkpoint.note.encode())
    out.result({"pinned": target, "tree_size": checkpoint.tree_size},
               f"pinned {len(keys)} log keys in {target}; the log holds {checkpoint.tree_size} entries")
    return EXIT_OK


def cmd_log_verify(args: argparse.Namespace, out: Output) -> int:
    """Inclusion in the log; with a pinned checkpoint of another size, linked to it by a consistency proof."""
    record = _read_json(args.record) if Path(args.record).is_file() else dict(_client(args).record_get(args.record))
    checkpoint = _read(args.checkpoint).decode() if args.checkpoint else None
    check = check_log(record, _log_keys(args.log_keys), checkpoint,
                      consistency=lambda first, second: _client(args).log_consistency(first, second))
    return _report(out, OfflineResult([check]))


def cmd_log_monitor(args: argparse.Namespace, out: Output) -> int:
    from svc_client.monitor import monitor_step

    client, keys, state = _client(args), _log_keys(args.log_keys), Path(args.state)
    polls = 0
    while True:
        step = monitor_step(client, keys, state)
        seen = "first checkpoint" if step.previous_size is None else f"consistent with {step.previous_size}"
        out.result({"tree_size": step.checkpoint.tree_size, "previous_size": step.previous_size, "consistent": True},
                   f"{time.strftime('%H:%M:%S')} tree size {step.checkpoint.tree_size}: {seen}")
        polls += 1
        if args.count and polls >= args.count:
            return EXIT_OK
        time.sleep(args.interval)


# --- parser ----------------------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="svc", description="Client of the content-provenance signing service.")
    parser.add_argument("--version", action="version", version=f"svc {__version__}")
    parser.add_argument("--url", default=os.environ.get("SVC_URL", DEFAULT_URL), help="service base URL (SVC_URL)")
    parser.add_argument("--api-key", default=os.environ.get("SVC_API_KEY"), help="svc_key_... (SVC_API_KEY)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per HTTP request")
    parser.add_argument("--json", action="store_true", help="print results as JSON, for scripts")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    def command(name: str, run: Callable, help_text: str, group=commands) -> argparse.ArgumentParser:
        sub = group.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(run=run)
        return sub

    keygen = command("keygen", cmd_keygen, "create an ML-DSA-65 signing key file (client-managed signing)")
    keygen.add_argument("out", help="key file to write (never overwritten; mode 0600)")
    keygen.add_argument("--kid", help="key id to register (default: the service's own key id of the key)")

    register = command("register", cmd_register, "register a generator")
    register.add_argument("name")
    register.add_argument("--key", help="client-managed: the key file whose public key to register")
    register.add_argument("--server-managed", action="store_true", help="the service creates and holds the key")
    register.add_argument("--formats", help="comma-separated: image,audio,text,video (default: all)")
    register.add_argument("--c2pa-signing", choices=("ml-dsa-65", "hybrid"),
                          help="server-managed: how C2PA manifests are signed (hybrid: ES256, which Content "
                               "Credentials readers check, countersigned with ML-DSA-65; default ml-dsa-65)")

    sign = command("sign", cmd_sign, "sign files: locally with --key (client-managed) or by upload; each "
                   "signed file is written as NAME.signed.EXT beside it, carrying its token")
    sign.add_argument("files", nargs="+", metavar="FILE")
    sign.add_argument("--generator", required=True, help="generator id")
    sign.add_argument("--model", required=True, help="AI model name")
    sign.add_argument("--key", help="client-managed: sign locally with this key file, submit the record and "
                                    "embed its token in the signed file")
    sign.add_argument("--watermark-id", default=NO_WATERMARK, help="client-managed: the signed watermark id")
    sign.add_argument("--phash", action=argparse.BooleanOptionalAction, default=True,
                      help="client-managed: send images' and videos' pHash, which finds a changed copy that lost "
                           "its token (default: on; --no-phash sends none)")
    sign.add_argument("--batch", action="store_true", help="client-managed: submit in batches of 50 (Growth plan)")
    sign.add_argument("--format", choices=("image", "audio", "text", "video"), help="server-managed: the family")
    sign.add_argument("--c2pa", action="store_true", help="server-managed: the signed file also carries a C2PA "
                                                          "manifest (JPEG, PNG, WebP, WAV, MP3, FLAC, MP4, MOV, PDF)")
    sign.add_argument("-o", "--output", help="where to write the signed file (one FILE)")
    sign.add_argument("--out-dir", help="folder for the signed files (default: beside each)")
    sign.add_argument("--force", action="store_true", help="overwrite signed files that exist (default: refuse, "
                                                           "before anything is signed)")
    _json_option(sign)

    verify = command("verify", cmd_verify, "verify a file (online, or --offline with pinned keys); prints the "
                                           "verdict in sentences, or the result as JSON with --json")
    verify.add_argument("file")
    verify.add_argument("--token", help="the svc_ token, when the file does not carry it")
    verify.add_argument("--offline", action="store_true", help="check locally against pinned keys and a record")
    verify.add_argument("--keys", help="--offline: pinned keys file (svc keys pin GENERATOR_ID)")
    verify.add_argument("--record", help="--offline: the record as a JSON file (svc record ID -o FILE)")
    verify.add_argument("--record-id", help="--offline: fetch this record once (default: the file's token)")
    verify.add_argument("--log-keys", help="--offline: also check log inclusion with these pinned log keys")
    verify.add_argument("--checkpoint", help="--offline: a pinned checkpoint the record's proof must match")
    _json_option(verify)

    record = command("record", cmd_record, "fetch a record (GET /v1/records/ID)")
    record.add_argument("record_id")
    record.add_argument("-o", "--output", help="write the record JSON here (for verify --offline --record)")

    keys = commands.add_parser("keys", help="pin a generator's public keys").add_subparsers(required=True,
                                                                                         metavar="ACTION")
    pin = command("pin", cmd_keys_pin, "save GET /v1/keys/GENERATOR_ID for offline verification", keys)
    pin.add_argument("generator_id")
    pin.add_argument("-o", "--output", help="file to write (default keys-GENERATOR_ID.json)")

    log = commands.add_parser("log", help="the transparency log").add_subparsers(required=True, metavar="ACTION")
    log_pin = command("pin", cmd_log_pin, "save the log's public keys (and its checkpoint)", log)
    log_pin.add_argument("-o", "--output", help="log keys file (default log-keys.json)")
    log_pin.add_argument("--checkpoint", help="also save the current checkpoint here")
    log_verify = command("verify", cmd_log_verify, "check a record's inclusion in the log", log)
    log_verify.add_argument("record", help="record JSON file, or record id (fetched once)")
    log_verify.add_argument("--log-keys", required=True, help="pinned log keys (svc log pin)")
    log_verify.add_argument("--checkpoint", help="a pinned checkpoint the proof must match")
    monitor = command("monitor", cmd_log_monitor, "follow the checkpoints; fail loudly on a fork", log)
    monitor.add_argument("--log-keys", required=True, help="pinned log keys (svc log pin)")
    monitor.add_argument("--state", default="log-monitor.json", help="the last consistent checkpoint seen")
    monitor.add_argument("--interval", type=float, default=60.0, help="seconds between polls")
    monitor.add_argument("--count", type=int, default=0, help="stop after this many polls (0: never)")
    return parser


def _json_option(command: argparse.ArgumentParser) -> None:
    """`svc COMMAND --json`, the same as `svc --json COMMAND` (SUPPRESS: not given, the global one stands)."""
    command.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                         help="print the result as JSON, for scripts")


if __name__ == "__main__":
    sys.exit(main())
