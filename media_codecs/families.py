"""The content families of the API: a codec's `family`, `POST /v1/sign`'s `format`, a generator's formats."""

# The spec's order (Signing, supported formats); generators list their formats in it.
FAMILIES = ("image", "audio", "text", "video")
