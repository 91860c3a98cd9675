"""The signer's wire protocol (pure): authenticated both ways, bounded, and refusing forgeries, other
secrets, stale requests and answers to other requests."""

import dataclasses
import socket
import threading

import cbor2
import pytest

from core import signer_protocol as protocol
from core.signer_protocol import ProtocolError, SignRequest, SignResponse
from tests.purity import assert_imports_without_django

SECRET = b"s" * 32
CHALLENGE = b"c" * 16
NOW = 1_800_000_000_000


def _request(**changes) -> SignRequest:
    values = {"org_id": "org-1", "generator_id": "gen-1", "kid": "k1", "algorithm": "ml-dsa-65",
              "purpose": "record", "message": b"payload", "now_ms": NOW}
    return SignRequest.new(**{**values, **changes})


def test_a_request_and_its_answer_round_trip():
    request = _request()
    opened = protocol.open_request(protocol.seal_request(request, SECRET, challenge=CHALLENGE), SECRET,
                                   now_ms=NOW + 1000, challenge=CHALLENGE)
    assert opened == request and opened.message_digest == protocol.hashlib.sha256(b"payload").hexdigest()
    signed = protocol.seal_response(SignResponse(request.request_id, signature=b"sig"), SECRET)
    assert protocol.open_response(signed, SECRET, request_id=request.request_id).signature == b"sig"
    refused = protocol.seal_response(SignResponse(request.request_id, error="revoked", detail="gone"), SECRET)
    answer = protocol.open_response(refused, SECRET, request_id=request.request_id)
    assert (answer.signature, answer.error, answer.detail) == (None, "revoked", "gone")


def test_another_secret_an_altered_field_or_a_swapped_label_is_refused():
    request = _request()
    sealed = protocol.seal_request(request, SECRET, challenge=CHALLENGE)
    with pytest.raises(ProtocolError, match="MAC"):
        protocol.open_request(sealed, b"t" * 32, now_ms=NOW, challenge=CHALLENGE)
    body, mac = sealed[:-32], sealed[-32:]
    fields = cbor2.loads(body)
    fields["gen"] = "gen-2"  # another generator, the MAC kept
    with pytest.raises(ProtocolError, match="MAC"):
        protocol.open_request(cbor2.dumps(fields) + mac, SECRET, now_ms=NOW, challenge=CHALLENGE)
    with pytest.raises(ProtocolError, match="MAC"):  # one bit of the MAC
        protocol.open_request(sealed[:-1] + bytes([sealed[-1] ^ 1]), SECRET, now_ms=NOW, challenge=CHALLENGE)
    answer = protocol.seal_response(SignResponse(request.request_id, signature=b"sig"), SECRET)
    with pytest.raises(ProtocolError, match="MAC"):  # an answer is not a request, even under the same secret
        protocol.open_request(answer, SECRET, now_ms=NOW, challenge=CHALLENGE)


def test_a_stale_request_and_an_answer_to_another_request_are_refused():
    request = _request()
    sealed = protocol.seal_request(request, SECRET, challenge=CHALLENGE)
    with pytest.raises(ProtocolError, match="window"):
        protocol.open_request(sealed, SECRET, now_ms=NOW + (protocol.WINDOW_SECONDS + 1) * 1000, challenge=CHALLENGE)
    answer = protocol.seal_response(SignResponse(request.request_id, signature=b"sig"), SECRET)
    with pytest.raises(ProtocolError, match="another request"):
        protocol.open_response(answer, SECRET, request_id=_request().request_id)


@pytest.mark.parametrize("frame", [b"", b"\x00", b"m" * 32, cbor2.dumps([b"x"]), cbor2.dumps([b"x", b"y" * 32, b"z"]),
                                   cbor2.dumps({"a": 1}), cbor2.dumps([1, 2]), b"\x9f" * 10_000])
def test_garbage_is_a_protocol_error(frame):
    with pytest.raises(ProtocolError):
        protocol.open_request(frame, SECRET, now_ms=NOW, challenge=CHALLENGE)


def test_unknown_purposes_algorithms_and_short_secrets_are_refused():
    with pytest.raises(ProtocolError):
        protocol.open_request(protocol.seal_request(_request(purpose="anything"), SECRET, challenge=CHALLENGE), SECRET,
                              now_ms=NOW, challenge=CHALLENGE)
    with pytest.raises(ProtocolError):
        protocol.open_request(protocol.seal_request(_request(algorithm="rsa"), SECRET, challenge=CHALLENGE), SECRET,
                              now_ms=NOW, challenge=CHALLENGE)
    with pytest.raises(ProtocolError, match="at least"):
        protocol.seal_request(_request(), b"short", challenge=CHALLENGE)


def test_frames_are_bounded_before_they_are_read():
    left, right = socket.socketpair()
    with left, right:
        right.sendall(protocol._LENGTH.pack(protocol.MAX_FRAME_BYTES + 1))
        with pytest.raises(ProtocolError, match="limit"):
            protocol.read_frame(left)  # refused from the header: nothing more is waited for
        with pytest.raises(ProtocolError):
            protocol.write_frame(right, b"x" * (protocol.MAX_FRAME_BYTES + 1))
    left, right = socket.socketpair()
    with left, right:
        thread = threading.Thread(target=protocol.write_frame, args=(right, b"hello"))
        thread.start()
        assert protocol.read_frame(left) == b"hello"
        thread.join()
        right.sendall(protocol._LENGTH.pack(10) + b"abc")
        right.shutdown(socket.SHUT_WR)
        with pytest.raises(ProtocolError, match="inside a frame"):
            protocol.read_frame(left)
    left, right = socket.socketpair()
    with left, right:
        right.close()
        with pytest.raises(EOFError):
            protocol.read_frame(left)


def test_the_protocol_needs_no_django():
    assert_imports_without_django(["core.signer_protocol"])


def test_an_operation_its_arguments_and_its_result_round_trip():
    request = _request(op="generate-key", args={"backend": "sealed", "n": 3, "flag": True, "raw": b"\x00"})
    opened = protocol.open_request(protocol.seal_request(request, SECRET, challenge=CHALLENGE), SECRET, now_ms=NOW,
                                   challenge=CHALLENGE)
    assert (opened.op, opened.args) == ("generate-key", {"backend": "sealed", "n": 3, "flag": True, "raw": b"\x00"})
    answer = protocol.seal_response(SignResponse(request.request_id, result={"kid": "k", "public_key": b"pk"}), SECRET)
    opened_answer = protocol.open_response(answer, SECRET, request_id=request.request_id)
    assert opened_answer.result == {"kid": "k", "public_key": b"pk"} and opened_answer.ok


@pytest.mark.parametrize("args", [{"nested": {"a": 1}}, {f"k{i}": i for i in range(17)}, {"x" * 65: 1},
                                  {"list": [1, 2]}])
def test_arguments_beyond_short_flat_values_are_refused(args):
    with pytest.raises(ProtocolError, match="args"):
        protocol.seal_request(_request(op="generate-key", args=args), SECRET, challenge=CHALLENGE)


def test_an_unknown_operation_is_refused_before_anything_is_done():
    sealed = protocol.seal_request(_request(op="unseal-everything"), SECRET, challenge=CHALLENGE)
    with pytest.raises(ProtocolError, match="unknown operation"):
        protocol.open_request(sealed, SECRET, now_ms=NOW, challenge=CHALLENGE)


def test_a_request_of_an_earlier_protocol_version_is_refused():
    request = _request()
    body = cbor2.dumps({"v": 3, "id": request.request_id, "t": NOW, "org": "o", "gen": "g", "kid": "k",
                        "alg": "ml-dsa-65", "for": "record", "msg": b"m", "op": "sign", "args": {}, "seq": 1})
    mac = protocol.hmac.new(SECRET, b"svc-signer request v1\x00" + CHALLENGE + body, protocol.hashlib.sha256).digest()
    with pytest.raises(ProtocolError, match="version"):  # authenticated, of the version before
        protocol.open_request(body + mac, SECRET, now_ms=NOW, challenge=CHALLENGE)
    with pytest.raises(ProtocolError):  # version 3's frame layout (a CBOR array of the map and its MAC)
        protocol.open_request(cbor2.dumps([body, mac]), SECRET, now_ms=NOW, challenge=CHALLENGE)


def test_a_request_is_bound_to_its_connections_challenge_and_carries_its_sequence_number():
    hello = protocol.seal_hello(CHALLENGE, SECRET)
    assert protocol.open_hello(hello, SECRET) == CHALLENGE
    with pytest.raises(ProtocolError, match="MAC"):
        protocol.open_hello(hello, b"t" * 32)  # a hello from something that does not hold the secret
    request = dataclasses.replace(_request(), sequence=7)
    sealed = protocol.seal_request(request, SECRET, challenge=CHALLENGE)
    assert protocol.open_request(sealed, SECRET, now_ms=NOW, challenge=CHALLENGE).sequence == 7
    with pytest.raises(ProtocolError, match="MAC"):  # copied to another connection: another challenge
        protocol.open_request(sealed, SECRET, now_ms=NOW, challenge=b"d" * 16)
    with pytest.raises(ProtocolError, match="MAC"):  # a hello is not a request
        protocol.open_request(hello, SECRET, now_ms=NOW, challenge=CHALLENGE)
