"""PDF: the token in the catalog's XMP metadata stream, written as an incremental update.

Embedding appends one incremental update (ISO 32000-1, 7.5.6) and never touches the bytes before
it, so pages, text and any earlier signature's /ByteRange stay as they were. The update holds a
new XMP metadata stream (the file's existing packet with our `svc:Token` description merged in,
every other property kept, see media_codecs.xmp) and the catalog again with /Metadata pointing at
it; its cross-reference section is of the same kind as the file's newest one: a classic table
after a table (hybrid files included), a cross-reference stream after a stream (PDF 1.5), so any
reader that read the file reads the update. The layout is in `update.py`.

The strip rule, which `content_hash` depends on:

- A C2PA manifest store travels in another update of ours, appended last (`c2pa.py`); when the
  file ends with it, it goes first, so a file hashes the same before and after its manifest.
- When the file then ends with our token update, `strip_token` returns the bytes before it: exactly the
  input that was signed. A file ends with our update when its tail is byte for byte the update
  we would write for the bytes before it and the token it carries (`update.without_our_update`),
  so the rule depends on nothing but the bytes.
- Otherwise (no token; our update followed by someone else's, such as a later signature or an
  annotation; our update with a byte changed) `strip_token` returns the file unchanged. Anything
  appended after our update changes the signed content, so such a file verifies as tampered,
  while its token is still read from the current catalog's metadata.
- Embedding into a file that ends with our update replaces it (strip, then a fresh update);
  into any other file it appends, merging into the current XMP (our older token is replaced
  there, so a packet never holds two).

Limits, checked while parsing: the header within the first 1,024 bytes, `startxref` within the
last 1,024, at most MAX_SECTIONS cross-reference sections and MAX_SUBSECTIONS subsections, no
loops in /Prev or among the objects resolved, objects nested at most 64 deep and of at most
200,000 tokens, each decoded stream at most 16 MB and 64 MB in all (MediaTooLarge past them).
Only the trailer, the catalog, its metadata stream and what they need are ever resolved, never
the page tree. Encrypted files (/Encrypt in a trailer) are UnsupportedFormat.
"""

from media_codecs.text.pdf.codec import CODEC, PdfCodec

__all__ = ["CODEC", "PdfCodec"]
