"""A verification result in words for the /verify page. The words themselves live in verification/summary.py,
which the API's `summary` field uses too, so the page and the API never disagree (spec, What the service
does, 5: finding nothing never means the content was made by a person)."""

from dataclasses import dataclass

from verification import summary as words


@dataclass(frozen=True)
class VerdictInWords:
    headline: str  # the API's `summary`
    confidence: str  # what the confidence level means
    reason: str | None
    found_through: str
    signals: list[words.Signal]


def verdict_in_words(result) -> VerdictInWords:
    """Words for a `verification.services.Verification`."""
    return VerdictInWords(headline=words.summary(result), confidence=words.CONFIDENCE[result.confidence],
                          reason=words.REASONS.get(result.reason) if result.reason else None,
                          found_through=words.SOURCES.get(result.token_source, result.token_source),
                          signals=words.signals(result))
