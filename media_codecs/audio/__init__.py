"""Audio family: the robust 64-bit watermark (the ``watermark`` package) shared by the audio formats."""
