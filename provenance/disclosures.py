"""What a signed file tells its reader about its origin, as flags a record keeps (Record.disclosures).

Pure module (no Django): the compliance report's documents name the flags without the database.
"""

import enum


class CarriedDisclosure(enum.IntFlag):
    """Record.disclosures holds the sum of the flags its signed file carried. Client-managed records carry
    none: the service wrote no file."""

    MARK = 1  # an invisible watermark (the record's watermark_id is not "none")
    METADATA = 2  # the token and disclosure metadata in the file's own metadata
    C2PA = 4  # a C2PA manifest for the record embedded at signing
    VISIBLE = 8  # a visible AI label shown on the content (disclosure=visible, media_codecs/label.py)


# The flags' names as the report shows them, in flag order: mark, metadata, c2pa, visible.
DISCLOSURE_NAMES: tuple[str, ...] = tuple(flag.name.lower() for flag in CarriedDisclosure)


def disclosure_counts(counts_by_flags: dict[int, int]) -> dict[str, int]:
    """How many records carried each disclosure, from record counts keyed by their (known) flags."""
    return {flag.name.lower(): sum(count for flags, count in counts_by_flags.items() if flags & flag)
            for flag in CarriedDisclosure}
