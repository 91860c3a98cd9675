"""Our token inside an XMP packet: build, merge into an existing packet, read and remove.

The token lives in one `rdf:Description` of our own namespace (`svc:Token`), written as a
self-contained element that declares the namespaces it uses. With a disclosure
(media_codecs/disclosure.py) the same element also carries the IPTC digital source type
(`Iptc4xmpExt:DigitalSourceType`), the system and its version (`Iptc4xmpExt:AISystemUsed`,
`Iptc4xmpExt:AISystemVersionUsed`) and, in our namespace, the provider, the time of creation and
the identifier: the disclosure belongs to the signing, so it comes and goes with the token. Merging splices that element
in front of the packet's closing `</rdf:RDF>` tag as text, and removing cuts exactly that
text out again, so the rest of a packet written by another tool survives byte for byte:
`remove_token(merge_token(p, t)) == p`. lxml parses every packet first, so a packet we
cannot parse is never edited, and a token written in another form (a re-serialised packet,
an attribute) is still found and removed through the tree.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from media_codecs.errors import CorruptMedia, UnsupportedFormat

if TYPE_CHECKING:
    from lxml import etree

    from media_codecs.disclosure import Disclosure

SVC_NAMESPACE = "https://ns.provenance.example/svc/1.0/"
IPTC_EXT_NAMESPACE = "http://iptc.org/std/Iptc4xmpExt/2008-02-29/"
RDF_NAMESPACE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
TOKEN_TAG = f"{{{SVC_NAMESPACE}}}Token"
_DESCRIPTION_TAG = f"{{{RDF_NAMESPACE}}}Description"
_ABOUT_ATTRIBUTE = f"{{{RDF_NAMESPACE}}}about"
_RDF_TAG = f"{{{RDF_NAMESPACE}}}RDF"

# XMP Specification Part 1, 7.3: the packet wrapper; the id is the fixed one the spec gives.
_EMPTY_PACKET = (
    b'<?xpacket begin="\xef\xbb\xbf" id="W5M0MpCehiHzreSzNTczkc9d"?>\n'
    b'<x:xmpmeta xmlns:x="adobe:ns:meta/">'
    b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
    b"</rdf:RDF></x:xmpmeta>\n"
    b'<?xpacket end="w"?>'
)

# Disclosure.fields() name -> the element that carries it, in the order they are written.
DISCLOSURE_ELEMENTS = {
    "source_type": "Iptc4xmpExt:DigitalSourceType",
    "system_name": "Iptc4xmpExt:AISystemUsed",
    "system_version": "Iptc4xmpExt:AISystemVersionUsed",
    "provider_name": "svc:Provider",
    "created": "svc:Created",
    "identifier": "svc:Identifier",
}
_PREFIXES = {"svc": SVC_NAMESPACE, "Iptc4xmpExt": IPTC_EXT_NAMESPACE}
# The same elements as lxml names them ({namespace}local).
_DISCLOSURE_TAGS = {name: f"{{{_PREFIXES[prefix]}}}{local}"
                    for name, (prefix, local) in ((name, element.split(":"))
                                                  for name, element in DISCLOSURE_ELEMENTS.items())}

_OUR_DESCRIPTION = re.compile(
    rb'<rdf:Description xmlns:rdf="'
    + re.escape(RDF_NAMESPACE.encode())
    + rb'" xmlns:svc="'
    + re.escape(SVC_NAMESPACE.encode())
    + rb'"(?: xmlns:Iptc4xmpExt="'
    + re.escape(IPTC_EXT_NAMESPACE.encode())
    + rb'")? rdf:about="[^"<>]*"><svc:Token>[^<>]*</svc:Token>'
    rb"(?:<(svc|Iptc4xmpExt):(\w+)>[^<>]*</\1:\2>)*"
    rb"</rdf:Description>"
)
# XML 1.0 section 2.2: characters outside this set cannot appear in a document at all.
_XML_INVALID_CHARACTER = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@cache
def _parser() -> etree.XMLParser:
    # Built on first use: lxml is imported only when a file has an XMP packet to read.
    from lxml import etree

    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def build_packet(token: str, disclosure: Disclosure | None = None) -> bytes:
    """Return a complete XMP packet carrying only `token` (and `disclosure`).

    Raises ValueError when the token contains characters XML cannot carry.
    """
    return merge_token(None, token, disclosure)


def merge_token(packet: bytes | None, token: str, disclosure: Disclosure | None = None) -> bytes:
    """Return `packet` (or a new packet) carrying `token` (and `disclosure`) in place of any token of ours.

    Raises CorruptMedia when `packet` is not well-formed XMP, ValueError for a bad token.
    """
    if _XML_INVALID_CHARACTER.search(token) or not token:
        raise ValueError("the token must be a non-empty string of XML characters")
    fields = {} if disclosure is None else {name: _XML_INVALID_CHARACTER.sub("", value)
                                             for name, value in disclosure.fields().items()}
    base = _EMPTY_PACKET if packet is None else remove_token(packet) or _EMPTY_PACKET
    rdf = _find_rdf(_parse(base))
    about = _first_about(rdf)
    closing_at = _closing_rdf_offset(base, rdf)
    return base[:closing_at] + _our_description(about, token, fields) + base[closing_at:]


def read_disclosure(packet: bytes) -> dict[str, str]:
    """The disclosure fields the packet carries beside our token, by Disclosure.fields() name ({} for none)."""
    try:
        root = _parse(packet)
    except CorruptMedia:
        return {}
    found = {}
    for name, tag in _DISCLOSURE_TAGS.items():
        node = next(root.iter(tag), None)
        if node is not None and node.text and node.text.strip():
            found[name] = node.text.strip()
    return found


def read_token(packet: bytes) -> str | None:
    """Return our token from `packet`, or None when absent or the packet is not XML."""
    try:
        root = _parse(packet)
    except CorruptMedia:
        return None
    for element in root.iter(TOKEN_TAG):
        if element.text and element.text.strip():
            return element.text.strip()
    for description in root.iter(_DESCRIPTION_TAG):
        value = description.get(TOKEN_TAG)
        if value and value.strip():
            return value.strip()
    return None


def remove_token(packet: bytes) -> bytes | None:
    """Return `packet` without our token; None when nothing is left in it.

    A packet without our token comes back unchanged, and so does one lxml cannot parse:
    nothing in it can be identified as ours. An empty packet (no properties) always gives
    None, so stripping a file gives the same bytes whether or not it was signed.
    Raises nothing.
    """
    try:
        root = _parse(packet)
    except CorruptMedia:
        return packet
    remaining = packet
    if _has_token(root):
        remaining = _OUR_DESCRIPTION.sub(b"", packet)
        root = _parse(remaining)
    if _has_token(root):
        # Written by another tool (e.g. re-serialised): edit the tree instead of the text.
        _remove_token_nodes(root)
        remaining = _serialize(root)
    return None if _is_empty(root) else remaining


def _parse(packet: bytes) -> etree._Element:
    # Some writers pad the packet with NULs up to a fixed segment size; XML forbids them.
    from lxml import etree

    text = packet.rstrip(b"\x00 \t\r\n")
    try:
        return etree.fromstring(text, _parser())
    except (etree.XMLSyntaxError, ValueError) as error:
        raise CorruptMedia(f"the XMP packet is not well-formed XML: {error}") from None


def _serialize(root: etree._Element) -> bytes:
    # Serialising the tree (not the root) keeps the <?xpacket?> instructions around it.
    from lxml import etree

    return etree.tostring(root.getroottree(), encoding="utf-8", xml_declaration=False)


def _has_token(root: etree._Element) -> bool:
    if next(root.iter(TOKEN_TAG), None) is not None:
        return True
    return any(d.get(TOKEN_TAG) is not None for d in root.iter(_DESCRIPTION_TAG))


def _remove_token_nodes(root: etree._Element) -> None:
    for element in list(root.iter(TOKEN_TAG)):
        parent = element.getparent()
        parent.remove(element)
        for disclosed in [child for child in parent if child.tag in _DISCLOSURE_TAGS.values()]:
            parent.remove(disclosed)  # the signing's, with it
        if _is_bare_description(parent):
            parent.getparent().remove(parent)
    for description in root.iter(_DESCRIPTION_TAG):
        description.attrib.pop(TOKEN_TAG, None)


def _find_rdf(root: etree._Element) -> etree._Element:
    rdf = root if root.tag == _RDF_TAG else next(root.iter(_RDF_TAG), None)
    if rdf is None:
        raise CorruptMedia("the XMP packet has no rdf:RDF element")
    return rdf


def _first_about(rdf: etree._Element) -> str:
    description = next(rdf.iter(_DESCRIPTION_TAG), None)
    return "" if description is None else description.get(_ABOUT_ATTRIBUTE, "")


def _closing_rdf_offset(packet: bytes, rdf: etree._Element) -> int:
    """Byte offset of the `</rdf:RDF>` closing tag, found with the prefix the packet uses."""
    name = b"RDF" if rdf.prefix is None else rdf.prefix.encode() + b":RDF"
    matches = list(re.finditer(rb"</" + re.escape(name) + rb"\s*>", packet))
    if not matches:
        # `<rdf:RDF/>`: no closing tag to insert before; rewriting it would alter their bytes.
        raise UnsupportedFormat("the XMP packet's rdf:RDF element is an empty tag")
    return matches[-1].start()


def _our_description(about: str, token: str, fields: dict[str, str]) -> bytes:
    # Declares xmlns:rdf itself so the element is valid whatever prefix the host packet uses.
    # (xml.sax.saxutils imported here: it pulls in urllib.request, http and ssl, which hashing never needs.)
    from xml.sax.saxutils import escape

    iptc = f' xmlns:Iptc4xmpExt="{IPTC_EXT_NAMESPACE}"' if fields else ""
    disclosed = "".join(f"<{DISCLOSURE_ELEMENTS[name]}>{escape(value)}</{DISCLOSURE_ELEMENTS[name]}>"
                        for name, value in fields.items())
    return (
        f'<rdf:Description xmlns:rdf="{RDF_NAMESPACE}" xmlns:svc="{SVC_NAMESPACE}"{iptc} '
        f"rdf:about={_double_quoted(about)}><svc:Token>{escape(token)}</svc:Token>{disclosed}</rdf:Description>"
    ).encode()


def _double_quoted(value: str) -> str:
    # Escaping every double quote first makes quoteattr always choose double quotes,
    # which is the form _OUR_DESCRIPTION recognises.
    from xml.sax.saxutils import quoteattr

    return quoteattr(value, {'"': "&quot;"})


def _is_bare_description(element: etree._Element) -> bool:
    if element.tag != _DESCRIPTION_TAG or len(element):
        return False
    return set(element.attrib) <= {_ABOUT_ATTRIBUTE}


def _is_empty(root: etree._Element) -> bool:
    """True when no description in the packet says anything (only `rdf:about` left)."""
    rdf = root if root.tag == _RDF_TAG else next(root.iter(_RDF_TAG), None)
    if rdf is None:
        return False
    children = [child for child in rdf if isinstance(child.tag, str)]
    return all(_is_bare_description(child) for child in children)
