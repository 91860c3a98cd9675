from __future__ import annotations

import pytest
from conftest import OTHER_TOKEN, TOKEN, XMP_WITH_CREATOR
from lxml import etree

from media_codecs import CorruptMedia, xmp
from media_codecs.disclosure import Disclosure, source_type_uri

DC_CREATOR = "{http://purl.org/dc/elements/1.1/}creator"


def test_a_built_packet_carries_the_token_and_nothing_else() -> None:
    packet = xmp.build_packet(TOKEN)
    assert packet.startswith(b"<?xpacket begin=") and packet.endswith(b'<?xpacket end="w"?>')
    assert xmp.read_token(packet) == TOKEN
    assert xmp.remove_token(packet) is None


def test_merging_keeps_every_other_property_and_removing_restores_the_bytes() -> None:
    merged = xmp.merge_token(XMP_WITH_CREATOR, TOKEN)
    assert xmp.read_token(merged) == TOKEN
    root = etree.fromstring(merged)
    assert next(root.iter(DC_CREATOR)).xpath("string()").strip() == "Ada Lovelace"
    assert xmp.remove_token(merged) == XMP_WITH_CREATOR


def test_merging_twice_replaces_the_token() -> None:
    twice = xmp.merge_token(xmp.merge_token(XMP_WITH_CREATOR, TOKEN), OTHER_TOKEN)
    assert xmp.read_token(twice) == OTHER_TOKEN
    assert twice.count(b"<svc:Token>") == 1
    assert xmp.remove_token(twice) == XMP_WITH_CREATOR


def test_our_description_takes_the_packets_rdf_about() -> None:
    packet = XMP_WITH_CREATOR.replace(b'rdf:about=""', b'rdf:about="uuid:a&amp;b"')
    merged = xmp.merge_token(packet, TOKEN)
    about = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}about"
    assert {d.get(about) for d in etree.fromstring(merged).iter(xmp._DESCRIPTION_TAG)} == {"uuid:a&b"}
    assert xmp.remove_token(merged) == packet


def test_a_token_rewritten_by_another_tool_is_still_read_and_removed() -> None:
    attribute_form = XMP_WITH_CREATOR.replace(
        b'rdf:about="" xmlns:dc', f'xmlns:svc="{xmp.SVC_NAMESPACE}" svc:Token="{TOKEN}" rdf:about="" xmlns:dc'.encode()
    )
    assert xmp.read_token(attribute_form) == TOKEN
    removed = xmp.remove_token(attribute_form)
    assert xmp.read_token(removed) is None and b"Ada Lovelace" in removed
    element_form = xmp.merge_token(XMP_WITH_CREATOR, TOKEN).replace(b"<svc:Token>", b"<svc:Token >")
    removed = xmp.remove_token(element_form)
    assert xmp.read_token(removed) is None and b"Ada Lovelace" in removed
    assert xmp.read_token(xmp.merge_token(element_form, OTHER_TOKEN)) == OTHER_TOKEN


def test_another_rdf_prefix_gets_a_valid_packet() -> None:
    packet = XMP_WITH_CREATOR.replace(b"rdf:", b"r:").replace(b"xmlns:rdf", b"xmlns:r")
    merged = xmp.merge_token(packet, TOKEN)
    assert xmp.read_token(merged) == TOKEN
    assert xmp.remove_token(merged) == packet


def test_special_characters_in_a_token_are_escaped() -> None:
    token = 'svc_<a&b>"c'
    assert xmp.read_token(xmp.build_packet(token)) == token
    assert xmp.remove_token(xmp.build_packet(token)) is None


def test_tokens_xml_cannot_carry_are_refused() -> None:
    for token in ("", "svc_\x00", "svc_\x1b"):
        with pytest.raises(ValueError):
            xmp.build_packet(token)


def test_a_malformed_packet_is_not_edited_and_reads_as_no_token() -> None:
    broken = b"<x:xmpmeta><rdf:RDF>"
    with pytest.raises(CorruptMedia):
        xmp.merge_token(broken, TOKEN)
    assert xmp.read_token(broken) is None
    assert xmp.remove_token(broken) == broken


def test_an_empty_packet_is_removed_whether_or_not_it_was_signed() -> None:
    empty = xmp.remove_token(xmp.build_packet(TOKEN)) or xmp._EMPTY_PACKET
    assert xmp.remove_token(empty) is None
    assert xmp.remove_token(xmp.merge_token(empty, TOKEN)) is None


def test_entities_are_not_expanded() -> None:
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
        b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        b'<rdf:Description rdf:about="" xmlns:svc="https://ns.provenance.example/svc/1.0/">'
        b"<svc:Token>&b;</svc:Token></rdf:Description></rdf:RDF></x:xmpmeta>"
    )
    assert xmp.read_token(bomb) in (None, "")


DISCLOSURE = Disclosure(source_type_uri("trainedAlgorithmicMedia"), "Acme <AI> & Co", "Acme Diffusion", "3.1",
                        "2026-11-28T02:30:00Z", "01234567-89ab-4def-8123-456789abcdef")


def test_the_disclosure_travels_with_the_token_and_goes_with_it() -> None:
    merged = xmp.merge_token(XMP_WITH_CREATOR, TOKEN, DISCLOSURE)
    root = etree.fromstring(merged)
    assert next(root.iter(f"{{{xmp.IPTC_EXT_NAMESPACE}}}DigitalSourceType")).text == DISCLOSURE.source_type
    assert xmp.read_disclosure(merged) == DISCLOSURE.fields()
    assert xmp.read_token(merged) == TOKEN
    assert xmp.remove_token(merged) == XMP_WITH_CREATOR
    replaced = xmp.merge_token(merged, OTHER_TOKEN)  # signed again without one: no stale disclosure is left
    assert xmp.read_disclosure(replaced) == {} and xmp.read_token(replaced) == OTHER_TOKEN


def test_a_disclosure_rewritten_by_another_tool_goes_with_the_token() -> None:
    merged = xmp.merge_token(XMP_WITH_CREATOR, TOKEN, DISCLOSURE).replace(b"<svc:Token>", b"<svc:Token >")
    removed = xmp.remove_token(merged)
    assert xmp.read_token(removed) is None and xmp.read_disclosure(removed) == {} and b"Ada Lovelace" in removed


def test_empty_names_are_left_out_and_characters_xml_cannot_carry_are_dropped() -> None:
    packet = xmp.build_packet(TOKEN, Disclosure(DISCLOSURE.source_type, provider_name="Acme\x00\x07 AI",
                                                identifier="id-1"))
    assert xmp.read_disclosure(packet) == {"source_type": DISCLOSURE.source_type, "provider_name": "Acme AI",
                                           "identifier": "id-1"}
    assert b"AISystemUsed" not in packet and xmp.remove_token(packet) is None
