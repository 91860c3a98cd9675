"""The live service the client tests talk to (pytest-django's live_server, on the test database) and one
sample file of every format the service signs."""

import pytest

from svc_client import Client, SigningKey
from svc_client.cli import main
from tests import audio, pdf_samples, text_samples, video
from tests.factories import make_api_key, make_org, make_user
from tests.media import photo_bytes


@pytest.fixture(scope="session")
def samples() -> dict[str, bytes]:
    """One small real file per format, by format name."""
    files = {fmt: photo_bytes(fmt=fmt) for fmt in ("jpeg", "png", "webp")}
    files.update(wav=audio.tagged_wav(), flac=audio.tagged_flac(), mp3=audio.tagged_mp3())
    files.update({fmt: video.sample(fmt) for fmt in ("mp4", "mov", "mkv", "webm")})
    files.update(txt=text_samples.english().encode(), html=text_samples.HTML_PAGE.encode(),
                 pdf=pdf_samples.text_pdf())
    return files


@pytest.fixture
def service(live_server):
    """A Client of the live service with a Growth organization's API key (batches need Growth)."""
    org = make_org(plan="growth")
    make_user(org=org)
    return Client(live_server.url, make_api_key(org=org))


@pytest.fixture
def client_generator(service):
    """(generator_id, key): a client-managed generator registered through the client."""
    key = SigningKey.generate()
    generator = service.generator_register(name="local", public_key=key.public_key_b64, kid=key.kid)
    return generator["generator_id"], key


@pytest.fixture
def svc(service, capsys):
    """Run `svc` with the live service's URL and key; returns (exit code, stdout, stderr)."""
    def run(*argv: str, key: bool = True, quiet: bool = True):
        options = ["--url", service.transport.base_url] + (["--quiet"] if quiet else [])
        if key:
            options += ["--api-key", service.transport.api_key]
        code = main([*options, *argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err
    return run
