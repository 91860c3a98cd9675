"""The zero-width text mark: exact-id recovery after the transformations text goes through, false ids,
overhead, and the end-to-end time of signing and verifying 1 MB of text.

Documents of about 1,000 words are made of real English prose: the docstrings of Python's standard
library, split into paragraphs (the sample of tests/text_samples.py added), each document a run of
consecutive paragraphs. Every trial marks one document with a fresh random id.

    .venv/bin/python bench/text_mark.py [--documents 200] [--runs 5]
"""

from __future__ import annotations

import argparse
import html as html_escape
import importlib
import io
import random
import re
import statistics
import sys
import textwrap
import time
import unicodedata
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve
from media_codecs import get_codec
from media_codecs.text import zerowidth
from tests.text_samples import ENGLISH

STDLIB = ("argparse", "asyncio", "collections", "concurrent.futures", "contextlib", "csv", "dataclasses",
          "datetime", "decimal", "difflib", "email", "enum", "functools", "heapq", "http.client", "inspect",
          "ipaddress", "itertools", "json", "logging", "multiprocessing", "pathlib", "pickle", "queue", "random",
          "re", "shutil", "socket", "sqlite3", "statistics", "string", "subprocess", "tarfile", "threading",
          "typing", "unittest", "urllib.parse", "uuid", "warnings", "xml.etree.ElementTree", "zipfile", "calendar",
          "codecs", "configparser", "doctest", "ftplib", "gettext", "imaplib", "locale", "mailbox", "optparse",
          "pdb", "pydoc", "sched", "selectors", "smtplib", "ssl", "textwrap", "timeit", "tokenize", "trace",
          "traceback", "turtle", "types", "wave", "zoneinfo", "tkinter", "xmlrpc.client", "poplib", "bdb",
          "cmd", "shelve", "plistlib", "fractions", "numbers", "operator", "glob", "fnmatch", "tempfile")
DOCUMENT_WORDS = 1000


def paragraphs() -> list[str]:
    """Prose paragraphs of 15 words or more from the standard library's docstrings, in a fixed order."""
    found = list(ENGLISH)
    for name in STDLIB:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            module = importlib.import_module(name)
        public = [value for key, value in sorted(vars(module).items()) if callable(value) and not key.startswith("_")]
        docs = [module.__doc__] + [getattr(value, "__doc__", None) for value in public]
        docs = [doc for doc in docs if isinstance(doc, str)]
        for doc in docs:
            for block in re.split(r"\n\s*\n", doc):
                words = block.split()
                if len(words) >= 15 and not re.search(r">>>|[{}]|^\s*[-*=]{3}", block):
                    found.append(" ".join(words))
    return list(dict.fromkeys(found))


def documents(pool: list[str], count: int, rng: random.Random) -> list[str]:
    out = []
    for _ in range(count):
        start, chosen = rng.randrange(len(pool)), []
        while sum(len(p.split()) for p in chosen) < DOCUMENT_WORDS:
            chosen.append(pool[(start + len(chosen)) % len(pool)])
        out.append("\n\n".join(chosen) + "\n")
    return out


def delete_words(text: str, share: float, rng: random.Random) -> str:
    parts = re.split(r"(\s+)", text)  # words at even indexes, the whitespace after them at odd ones
    return "".join(part for index, part in enumerate(parts)
                   if index % 2 or rng.random() >= share or not part)


def as_html(text: str) -> bytes:
    body = "\n".join(f"<p>{html_escape.escape(p)}</p>" for p in text.split("\n\n") if p.strip())
    return f"<!DOCTYPE html><html><head><title>t</title></head><body>{body}</body></html>".encode()


def transformations(rng: random.Random):
    import lxml.html

    html = get_codec("html")

    def quoted(marked: str, mark: int) -> bool:
        long_ones = [p for p in marked.split("\n\n") if len(p.split()) >= 40]
        return bool(long_ones) and zerowidth.extract(rng.choice(long_ones)) == mark

    def through_html(text: str, mark: int) -> bool:
        marked_html = html.embed_watermark(as_html(text), mark)
        return zerowidth.extract(lxml.html.fromstring(marked_html.decode()).text_content()) == mark

    return {
        "quote one paragraph of 40+ words": lambda text, marked, mark: quoted(marked, mark),
        "NFC": lambda text, marked, mark: zerowidth.extract(unicodedata.normalize("NFC", marked)) == mark,
        "NFKC": lambda text, marked, mark: zerowidth.extract(unicodedata.normalize("NFKC", marked)) == mark,
        "HTML -> lxml text_content()": lambda text, marked, mark: through_html(text, mark),
        "whitespace collapsed": lambda text, marked, mark: zerowidth.extract(" ".join(marked.split())) == mark,
        "re-wrapped at 60 columns": lambda text, marked, mark: zerowidth.extract(
            "\n\n".join(textwrap.fill(p, 60) for p in marked.split("\n\n"))) == mark,
        "10% of words deleted": lambda text, marked, mark: zerowidth.extract(delete_words(marked, 0.1, rng)) == mark,
    }


def timed_requests(runs: int, database_url: str) -> dict[str, list[float]]:
    """POST /v1/sign and /v1/verify of 1 MB of text through the whole stack (Django test client, PostgreSQL)."""
    serve.django_in_process(serve.prepared_database(database_url, ALLOWED_HOSTS="testserver"))
    from rest_framework.test import APIClient

    from tests import factories

    org = factories.make_org(plan="enterprise", name="bench-text")
    generator = factories.make_generator(org=org, formats=["text"])
    signer, verifier = APIClient(), APIClient()
    signer.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.make_api_key(org=org)}")
    pool = paragraphs()
    text = "\n\n".join(pool * (1 + 1_000_000 // sum(len(p) + 2 for p in pool)))[:1_000_000].encode()
    times: dict[str, list[float]] = {"sign": [], "verify": []}
    for _ in range(runs + 1):  # the first run warms up; it is not counted
        started = time.perf_counter()
        signed = signer.post("/v1/sign", {"content": io.BytesIO(text), "model": "bench", "format": "text",
                                          "generator_id": str(generator.pk)}, format="multipart")
        times["sign"].append(time.perf_counter() - started)
        assert signed.status_code == 201, signed.content[:200]
        started = time.perf_counter()
        result = verifier.post("/v1/verify", {"content": io.BytesIO(signed.content)}, format="multipart").json()
        times["verify"].append(time.perf_counter() - started)
        assert result["authentic"] and result["token_source"] == "watermark", result
    return {name: values[1:] for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5, help="timed 1 MB sign/verify requests")
    parser.add_argument("--database-url", default=serve.DEFAULT_DATABASE_URL)
    args = parser.parse_args()
    rng = random.Random(2026)
    pool = paragraphs()
    docs = documents(pool, args.documents, rng)
    attacks = transformations(rng)
    recovered = dict.fromkeys(attacks, 0)
    overheads = []
    for text in docs:
        mark = rng.getrandbits(64)
        marked = zerowidth.embed(text, mark)
        overheads.append((len(marked) - len(text)) / len(text))
        for name, attack in attacks.items():
            recovered[name] += attack(text, marked, mark)
    unmarked = [p for p in pool if len(p.split()) >= 15][:1000]
    false_ids = sum(zerowidth.extract(p) is not None for p in unmarked)
    words = statistics.mean(len(d.split()) for d in docs)
    paragraphs_a_doc = statistics.mean(len(d.split("\n\n")) for d in docs)
    print(f"{len(docs)} documents of {words:.0f} words on average ({paragraphs_a_doc:.1f} paragraphs), "
          f"from {len(pool)} prose paragraphs of the standard library's docstrings\n")
    print("| transformation | exact id recovered |")
    print("|---|---|")
    for name, count in recovered.items():
        print(f"| {name} | {count / len(docs):.1%} |")
    print(f"\nFalse ids on {len(unmarked)} unmarked paragraphs: {false_ids}")
    over = sum(share > 0.05 for share in overheads)
    print(f"Overhead (zero-width characters added / characters): mean {statistics.mean(overheads):.2%}, "
          f"median {statistics.median(overheads):.2%}, max {max(overheads):.2%}; {over} of {len(overheads)} "
          f"documents over 5% (29 characters a paragraph of 40 words or more: 5% or less once such paragraphs "
          f"average 90 words)")
    timings = timed_requests(args.runs, args.database_url)
    print(f"\n1 MB of text through the whole stack, {args.runs} runs:\n")
    print("| request | median ms | worst ms |")
    print("|---|---|---|")
    for name, values in timings.items():
        print(f"| POST /v1/{name} | {statistics.median(values) * 1000:.0f} | {max(values) * 1000:.0f} |")


if __name__ == "__main__":
    main()
