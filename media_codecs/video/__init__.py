"""Video: MP4 and QuickTime (ISO BMFF boxes), Matroska and WebM (EBML); token and fingerprints."""
