"""What a provenance record's signer and its verifiers must compute byte for byte, shared by the service and
the client package (`client/`): the content hash of a file (the container-removal rule itself is
`media_codecs`' `hashed_parts`), the RFC 8785 canonical JSON of the signed payload and ML-DSA-65.

Pure: no Django, no database, no network. The service imports it, and the client's wheel includes it and
`media_codecs` from this repository, so there is one copy of each rule.
"""
