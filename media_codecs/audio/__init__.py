"""Audio family: the robust 64-bit watermark (``watermark.py``) shared by the audio formats."""
