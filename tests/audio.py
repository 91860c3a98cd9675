"""Audio made at test time: synthesised tones, noise and chirps as WAV (our own writer, so the chunk
layout is under control), FLAC (libsndfile) and MP3 (LAME), with real tags added by mutagen; a RIFF
walker; and ffprobe when it is installed."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tempfile

import av
import lameenc
import numpy as np
import soundfile
from mutagen import flac as mutagen_flac
from mutagen import id3 as mutagen_id3
from PIL import Image

RATE = 44_100


def _cover() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), (200, 80, 40)).save(buffer, "JPEG", quality=80)
    return buffer.getvalue()


JPEG_PICTURE = _cover()  # a real JPEG: ffprobe decodes attached pictures


def tone(seconds: float = 1.0, rate: int = RATE, channels: int = 2, frequency: float = 440.0) -> np.ndarray:
    """A sine per channel (a fifth apart), at half scale, as float64 (frames, channels)."""
    t = np.arange(int(seconds * rate)) / rate
    return np.stack([0.5 * np.sin(2 * np.pi * frequency * 1.5**c * t) for c in range(channels)], axis=1)


def noise(seconds: float = 1.0, rate: int = RATE, channels: int = 2) -> np.ndarray:
    return np.random.default_rng(5).uniform(-0.4, 0.4, (int(seconds * rate), channels))


def chirp(seconds: float = 1.0, rate: int = RATE, channels: int = 1) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    wave = 0.6 * np.sin(2 * np.pi * (200 * t + 2000 * t**2 / seconds))
    return np.repeat(wave[:, None], channels, axis=1)


# --- WAV ------------------------------------------------------------------------------------------

def chunk(chunk_id: bytes, payload: bytes) -> bytes:
    return chunk_id + len(payload).to_bytes(4, "little") + payload + b"\x00" * (len(payload) % 2)


def fmt_payload(channels: int, rate: int, bits: int, *, is_float: bool = False, extensible: bool = False) -> bytes:
    tag = 3 if is_float else 1
    block = channels * bits // 8
    common = (channels.to_bytes(2, "little") + rate.to_bytes(4, "little") + (rate * block).to_bytes(4, "little")
              + block.to_bytes(2, "little") + bits.to_bytes(2, "little"))
    if not extensible:
        return tag.to_bytes(2, "little") + common
    mask = (1 << channels) - 1
    guid = tag.to_bytes(2, "little") + bytes.fromhex("000000001000800000aa00389b71")
    extension = (22).to_bytes(2, "little") + bits.to_bytes(2, "little") + mask.to_bytes(4, "little") + guid
    return b"\xfe\xff" + common + extension


def pcm_payload(samples: np.ndarray, bits: int, *, is_float: bool = False) -> bytes:
    if is_float:
        return samples.astype("<f4" if bits == 32 else "<f8").tobytes()
    scale = 1 << (bits - 1)
    values = np.clip(np.rint(samples * scale), -scale, scale - 1).astype(np.int64).ravel()
    if bits == 8:
        return (values + 128).astype(np.uint8).tobytes()
    if bits == 24:
        return values.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
    return values.astype({16: "<i2", 32: "<i4"}[bits]).tobytes()


def list_info(**fields: str) -> bytes:
    """A LIST/INFO chunk payload (INAM title, IART artist...): odd-length strings make odd sub-chunks."""
    return b"INFO" + b"".join(chunk(key.encode(), value.encode() + b"\x00") for key, value in fields.items())


def wav_bytes(samples: np.ndarray, rate: int = RATE, bits: int = 16, *, is_float: bool = False,
              extensible: bool = False, before: tuple[bytes, ...] = (), after: tuple[bytes, ...] = ()) -> bytes:
    """A WAV file: fmt, the `before` chunks, data, the `after` chunks (each already a whole chunk)."""
    fmt = chunk(b"fmt ", fmt_payload(samples.shape[1], rate, bits, is_float=is_float, extensible=extensible))
    body = b"WAVE" + fmt + b"".join(before) + chunk(b"data", pcm_payload(samples, bits, is_float=is_float))
    body += b"".join(after)
    return b"RIFF" + len(body).to_bytes(4, "little") + body


def tagged_wav(samples: np.ndarray | None = None, bits: int = 16) -> bytes:
    """A WAV with LIST/INFO, an unknown chunk, and an odd-sized chunk after the data."""
    samples = tone(0.5) if samples is None else samples
    return wav_bytes(samples, bits=bits, before=(chunk(b"LIST", list_info(INAM="Test tone", IART="Ada")),
                                                 chunk(b"junk", b"\x01\x02\x03\x04")),
                     after=(chunk(b"odd ", b"abc"), chunk(b"cue ", (0).to_bytes(4, "little"))))


def riff_walk(data: bytes) -> list[tuple[bytes, int]]:
    """The (id, size) of every top-level chunk, asserting that they cover the file exactly: RIFF size is
    the file size minus 8, every odd-sized chunk carries its pad byte, nothing is left over."""
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    assert int.from_bytes(data[4:8], "little") == len(data) - 8
    position, found = 12, []
    while position < len(data):
        assert position + 8 <= len(data), "truncated chunk header"
        size = int.from_bytes(data[position + 4 : position + 8], "little")
        end = position + 8 + size + size % 2
        assert end <= len(data), f"chunk {data[position:position + 4]!r} runs past the end"
        if size % 2:
            assert data[end - 1] == 0, "pad byte is not zero"
        found.append((data[position : position + 4], size))
        position = end
    assert position == len(data)
    return found


def chunk_bytes(data: bytes, chunk_id: bytes) -> bytes:
    """The whole chunk `chunk_id` (header, payload, pad) of a well-formed WAV."""
    position = 12
    while position < len(data):
        size = int.from_bytes(data[position + 4 : position + 8], "little")
        end = position + 8 + size + size % 2
        if data[position : position + 4] == chunk_id:
            return data[position:end]
        position = end
    raise KeyError(chunk_id)


# --- FLAC -----------------------------------------------------------------------------------------

def flac_bytes(samples: np.ndarray, rate: int = RATE, bits: int = 16) -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, samples, rate, format="FLAC", subtype={8: "PCM_S8", 16: "PCM_16", 24: "PCM_24"}[bits])
    return buffer.getvalue()


def tagged_flac(samples: np.ndarray | None = None, bits: int = 16) -> bytes:
    """A FLAC with comments (title, artist), a front-cover PICTURE and padding, written by mutagen."""
    buffer = io.BytesIO(flac_bytes(tone(0.5) if samples is None else samples, bits=bits))
    tags = mutagen_flac.FLAC(buffer)
    tags["TITLE"], tags["ARTIST"] = "Test tone", "Ada"
    picture = mutagen_flac.Picture()
    picture.type, picture.mime, picture.data = 3, "image/jpeg", JPEG_PICTURE
    tags.add_picture(picture)
    buffer.seek(0)
    tags.save(buffer)
    return buffer.getvalue()


# --- MP3 ------------------------------------------------------------------------------------------

def lame_mp3(samples: np.ndarray, rate: int = RATE, kbps: int = 128) -> bytes:
    """Plain LAME frames (joint stereo for two channels), no info frame."""
    encoder = lameenc.Encoder()
    encoder.set_bit_rate(kbps)
    encoder.set_in_sample_rate(rate)
    encoder.set_channels(samples.shape[1])
    encoder.set_quality(7)
    encoder.silence()
    pcm = np.clip(np.rint(samples * 32767), -32768, 32767).astype("<i2").tobytes()
    return bytes(encoder.encode(pcm) + encoder.flush())


def ffmpeg_mp3(samples: np.ndarray, rate: int = RATE, kbps: int = 128, *, joint: bool = True) -> bytes:
    """LAME through FFmpeg's muxer: a Xing/LAME "Info" frame first, no tags."""
    layout = "mono" if samples.shape[1] == 1 else "stereo"
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp3", options={"id3v2_version": "0", "write_id3v1": "0"}) as output:
        stream = output.add_stream("libmp3lame", rate=rate, layout=layout)
        stream.bit_rate = kbps * 1000
        stream.codec_context.options = {"joint_stereo": "1" if joint else "0"}
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(samples.T, dtype=np.float32), format="fltp",
                                           layout=layout)
        frame.sample_rate = rate
        for packet in (*stream.encode(frame), *stream.encode(None)):
            output.mux(packet)
    return buffer.getvalue()


def with_id3(mp3: bytes, *, version: int = 4, id3v1: bool = False) -> bytes:
    """`mp3` with an ID3v2 tag (TIT2, TPE1, COMM, APIC, 512 bytes of padding) and optionally ID3v1."""
    buffer = io.BytesIO(mp3)
    tags = mutagen_id3.ID3()
    tags.add(mutagen_id3.TIT2(encoding=3, text="Test tone"))
    tags.add(mutagen_id3.TPE1(encoding=3, text="Ada"))
    tags.add(mutagen_id3.COMM(encoding=3, lang="eng", desc="", text="a comment"))
    tags.add(mutagen_id3.APIC(encoding=3, mime="image/jpeg", type=3, desc="cover", data=JPEG_PICTURE))
    tags.save(buffer, v2_version=version, v1=2 if id3v1 else 0, padding=lambda info: 512)
    return buffer.getvalue()


def tagged_mp3(samples: np.ndarray | None = None, **options) -> bytes:
    return with_id3(lame_mp3(tone(1.0) if samples is None else samples), **options)


# --- ffprobe --------------------------------------------------------------------------------------

def has_ffprobe() -> bool:
    return shutil.which("ffprobe") is not None


def ffprobe(data: bytes, suffix: str) -> tuple[str, dict]:
    """(stderr of `ffprobe -v error`, the first audio stream) for `data` written to a temporary file."""
    with tempfile.NamedTemporaryFile(suffix=suffix) as file:
        file.write(data)
        file.flush()
        result = subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", file.name],
                                capture_output=True, timeout=600, check=False)
    streams = json.loads(result.stdout or b"{}").get("streams", [])
    audio = next((stream for stream in streams if stream.get("codec_type") == "audio"), {})
    return result.stderr.decode(errors="replace"), audio
