"""What a device follows and how often (``arc-edge serve --follow``): its branch of the options tree.

Apart from follower.py so that the server's options (and so every ``arc-edge`` command line) do not import tuf.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edge_runtime.flags import option


@dataclass
class FollowOptions:
    """What to follow and how often; ``misslog`` uploads rotated miss-log files after each poll."""

    reference: str = option(flag="--follow", metavar="REGISTRY/REPO",
                            help="poll this registry repository for bundles named in its TUF metadata (needs --tuf-root)")
    #: the root.json the build server handed out (used until a newer root is trusted)
    tuf_root: Path = option(flag="--tuf-root", type=Path, help="the fleet's TUF root.json (from arc-build tuf init)")
    interval_s: float = option(60.0, flag="--poll-interval", help="seconds between polls of --follow")
    #: each wait is interval * uniform(1 - jitter, 1 + jitter)
    jitter: float = option(0.2, flag="--poll-jitter", help="each wait is the interval times 1 +- this")
    timeout_s: float = option(30.0, help="time budget of one registry request (seconds)")
    upload_misses: bool = option(False, flag="--upload-misses",
                                 help="send rotated miss-log files to the followed repository (tags misslog.*)")
    share_questions: bool = option(
        False, flag="--share-questions",
        help="with --upload-misses, include the question text (default: its sha256, entry and reason)")
    device_id: str = option("", flag="--device-id",
                            help="this device's name in miss-log tags (default: a host-name hash)")
