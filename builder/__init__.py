"""ARC build server: turns reasoning transcripts into verified, compiled cache entries."""

import edge_runtime  # noqa: F401 - first, so that onnxruntime starts with telemetry off (edge_runtime/__init__.py)

__version__ = "0.1.0"
