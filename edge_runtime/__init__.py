"""ARC edge runtime: loads compiled cache entries and answers questions on a plain CPU, offline."""

import os

# onnxruntime reads this once, when it is first imported. Every module that imports it (model/, route/, and the
# builder's export, whose package imports this one first) is imported through this package, so this is the one
# place that sets it; a value the environment already has is kept.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

__version__ = "0.1.0"
