"""ARC edge runtime: loads compiled cache entries and answers questions on a plain CPU, offline."""

__version__ = "0.1.0"
