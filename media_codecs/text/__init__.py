"""Text formats behind `text.base.TextCodec`: PDF (the token in the catalog's XMP metadata stream), HTML and plain
text."""
