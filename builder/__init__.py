"""ARC build server: turns reasoning transcripts into verified, compiled cache entries."""

__version__ = "0.1.0"
