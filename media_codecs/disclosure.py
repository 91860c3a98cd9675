"""What a signed file discloses about its making: the IPTC digital source type and the latent disclosure.

The digital source type is a term of IPTC's controlled vocabulary (NewsCodes "digitalsourcetype"): a file
made by a generative model is `trainedAlgorithmicMedia`, one that mixes such output with other material
`compositeWithTrainedAlgorithmicMedia`. A generator declares one, as the vocabulary's URI or its last
segment; files always carry the URI, the form XMP's `Iptc4xmpExt:DigitalSourceType` and C2PA's actions
take. The latent disclosure adds who made the file with what, when, and under which identifier: the
provider's name, the system's name and version, the time of signing and the record's id.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE_TYPE_BASE = "http://cv.iptc.org/newscodes/digitalsourcetype/"
DEFAULT_SOURCE_TYPE = "trainedAlgorithmicMedia"
# The vocabulary's current terms (IPTC NewsCodes, digitalsourcetype); a generator may declare any of them.
SOURCE_TYPES = frozenset({
    "digitalCapture", "computationalCapture", "negativeFilm", "positiveFilm", "print", "humanEdits",
    "compositeCapture", "algorithmicallyEnhanced", "digitalCreation", "dataDrivenMedia", "trainedAlgorithmicMedia",
    "compositeWithTrainedAlgorithmicMedia", "compositeSynthetic", "algorithmicMedia", "screenCapture",
    "virtualRecording", "composite",
})


def source_type_term(value: str) -> str | None:
    """The vocabulary's term for `value` (a term or its URI, http or https), or None when it is not one."""
    term = value.strip()
    for prefix in (SOURCE_TYPE_BASE, SOURCE_TYPE_BASE.replace("http://", "https://", 1)):
        if term.startswith(prefix):
            term = term[len(prefix):]
            break
    return term if term in SOURCE_TYPES else None


def source_type_uri(value: str) -> str:
    """The URI files carry for a declared digital source type. Raises ValueError for a term not in the vocabulary."""
    term = source_type_term(value)
    if term is None:
        raise ValueError(f"not an IPTC digital source type: {value!r}")
    return SOURCE_TYPE_BASE + term


@dataclass(frozen=True)
class Disclosure:
    """The machine-readable disclosure one signed file carries. Empty names are left out of the file."""

    source_type: str  # the URI (source_type_uri)
    provider_name: str = ""
    system_name: str = ""
    system_version: str = ""
    created: str = ""  # ISO 8601, UTC: the signing time
    identifier: str = ""  # the record's id

    def fields(self) -> dict[str, str]:
        """The non-empty fields, by name, in a fixed order (what every format writes)."""
        values = {"source_type": self.source_type, "provider_name": self.provider_name,
                  "system_name": self.system_name, "system_version": self.system_version,
                  "created": self.created, "identifier": self.identifier}
        return {name: value for name, value in values.items() if value}
