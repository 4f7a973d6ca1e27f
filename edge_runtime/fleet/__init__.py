"""Devices that follow a fleet: bundles from an OCI registry, TUF metadata that says which version to run.

``registry``: the OCI distribution HTTP API (blobs and manifests by digest, every digest verified);
``media``: the artefact media types and reference parsing; ``tuf_fetcher``: TUF metadata read from
registry tags; ``follower``: the poll loop that pulls, verifies and activates through the runtime;
``misslog_upload``: the rotated miss log sent back to the registry for ``arc-build heat``.
"""
