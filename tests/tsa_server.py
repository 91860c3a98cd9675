"""A real RFC 3161 time-stamp authority for tests: OpenSSL's `ts -reply` behind a small HTTP handler.

`LocalTsa()` makes its own PKI with `cryptography` (a root CA and a time-stamping certificate whose
extended key usage is id-kp-timeStamping, critical, as RFC 3161 requires), writes the `openssl ts`
configuration, and serves `POST /` with `Content-Type: application/timestamp-query` on a free port of
127.0.0.1. Each request is answered by running `openssl ts -reply` on it: the tokens are OpenSSL's, not
ours. Skipped where the openssl command is missing.
"""

import datetime
import shutil
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

OPENSSL = shutil.which("openssl")
TSA_POLICY = "1.3.6.1.4.1.59327.1.1"  # a policy OID of the test authority's own


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Test TSA"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_pki(common_name: str = "Test Time-Stamping Authority") -> dict:
    """A root CA and a time-stamping certificate it issued: {'root': cert, 'root_key', 'tsa': cert, 'tsa_key'}."""
    now = datetime.datetime.now(datetime.UTC)
    root_key = ec.generate_private_key(ec.SECP256R1())
    root_name = _name(f"{common_name} Root")
    root = (x509.CertificateBuilder().subject_name(root_name).issuer_name(root_name)
            .public_key(root_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(root_key.public_key()), critical=False)
            .sign(root_key, hashes.SHA256()))
    tsa_key = ec.generate_private_key(ec.SECP256R1())
    tsa = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(root.subject)
           .public_key(tsa_key.public_key()).serial_number(x509.random_serial_number())
           .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=365))
           .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
           .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=True, key_encipherment=False,
                                        data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                        crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
           .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
           # C2PA validators check a stamp's certificate as a signer's: key identifiers both ways.
           .add_extension(x509.SubjectKeyIdentifier.from_public_key(tsa_key.public_key()), critical=False)
           .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(root_key.public_key()), critical=False)
           .sign(root_key, hashes.SHA256()))
    return {"root": root, "root_key": root_key, "tsa": tsa, "tsa_key": tsa_key}


def _pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


class _Handler(BaseHTTPRequestHandler):
    server: "_TsaHttpServer"

    def do_POST(self):
        query = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.requests += 1
        if self.server.answer_override is not None:
            status, content_type, body = self.server.answer_override
        else:
            status, content_type, body = 200, "application/timestamp-reply", self.server.reply(query)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _TsaHttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, folder: Path):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.folder = folder
        self.requests = 0
        self.answer_override: tuple[int, str, bytes] | None = None
        self.serial = 0
        self._serial_lock = threading.Lock()

    def reply(self, query: bytes) -> bytes:
        """OpenSSL's answer to `query`. Requests are answered concurrently, as a real authority answers them:
        each gets its own serial number file (OpenSSL rewrites the one it is given) and configuration."""
        with self._serial_lock:
            self.serial += 1
            serial = self.serial
        with tempfile.TemporaryDirectory(dir=self.folder) as work:
            folder = Path(work)
            (folder / "serial").write_text(f"{serial:02X}\n")
            configuration = (self.folder / "tsa.cnf").read_text().replace(f"{self.folder}/serial", f"{folder}/serial")
            (folder / "tsa.cnf").write_text(configuration)
            (folder / "query.tsq").write_bytes(query)
            subprocess.run([OPENSSL, "ts", "-reply", "-config", str(folder / "tsa.cnf"), "-queryfile",
                            str(folder / "query.tsq"), "-out", str(folder / "reply.tsr")], check=True,
                           capture_output=True, timeout=60)
            return (folder / "reply.tsr").read_bytes()


class LocalTsa:
    """`with LocalTsa() as tsa:` a running authority; `tsa.url`, `tsa.root` (the certificate to trust)."""

    def __init__(self, common_name: str = "Test Time-Stamping Authority"):
        self.pki = make_pki(common_name)
        self.root: x509.Certificate = self.pki["root"]
        self._folder = tempfile.TemporaryDirectory(prefix="tsa-")
        self.folder = Path(self._folder.name)
        self._write_configuration()
        self.server = _TsaHttpServer(self.folder)
        self.url = f"http://127.0.0.1:{self.server.server_port}/"

    def _write_configuration(self) -> None:
        folder = self.folder
        (folder / "tsa.pem").write_bytes(_pem(self.pki["tsa"]))
        (folder / "chain.pem").write_bytes(_pem(self.pki["tsa"]) + _pem(self.root))
        (folder / "root.pem").write_bytes(_pem(self.root))
        (folder / "tsa.key").write_bytes(self.pki["tsa_key"].private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        (folder / "serial").write_text("01\n")
        (folder / "tsa.cnf").write_text(f"""
[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
serial = {folder}/serial
crypto_device = builtin
signer_cert = {folder}/tsa.pem
signer_key = {folder}/tsa.key
signer_digest = sha256
default_policy = {TSA_POLICY}
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = no
ess_cert_id_chain = no
ess_cert_id_alg = sha256
""")

    @property
    def requests(self) -> int:
        return self.server.requests

    def answer_with(self, status: int, content_type: str, body: bytes) -> None:
        """From now on answer every request with this instead of a token (None restores tokens)."""
        self.server.answer_override = (status, content_type, body)

    def answer_tokens(self) -> None:
        self.server.answer_override = None

    def __enter__(self) -> "LocalTsa":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._folder.cleanup()
