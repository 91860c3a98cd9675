"""Text formats: PDF (the token in the catalog's XMP metadata stream), HTML and plain text."""
