import pytest

from media_codecs.disclosure import SOURCE_TYPE_BASE, Disclosure, source_type_term, source_type_uri


@pytest.mark.parametrize(("value", "term"), [
    ("trainedAlgorithmicMedia", "trainedAlgorithmicMedia"),
    (SOURCE_TYPE_BASE + "compositeWithTrainedAlgorithmicMedia", "compositeWithTrainedAlgorithmicMedia"),
    ("https://cv.iptc.org/newscodes/digitalsourcetype/algorithmicMedia", "algorithmicMedia"),
    (" digitalCapture ", "digitalCapture"),
    ("TrainedAlgorithmicMedia", None),
    ("http://example.com/digitalsourcetype/trainedAlgorithmicMedia", None),
    (SOURCE_TYPE_BASE, None),
    ("", None),
])
def test_a_term_is_known_by_itself_or_its_uri(value, term):
    assert source_type_term(value) == term


def test_files_carry_the_uri_and_unknown_terms_are_refused():
    assert source_type_uri("trainedAlgorithmicMedia") == SOURCE_TYPE_BASE + "trainedAlgorithmicMedia"
    with pytest.raises(ValueError):
        source_type_uri("aiGenerated")


def test_only_non_empty_fields_are_written_in_a_fixed_order():
    disclosure = Disclosure("uri", system_name="S", identifier="id")
    assert list(disclosure.fields().items()) == [("source_type", "uri"), ("system_name", "S"), ("identifier", "id")]
