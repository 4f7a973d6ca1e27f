"""TUF metadata read from the registry: a ``tuf.ngclient`` fetcher that maps metadata file names to tags.

python-tuf's ``Updater`` does every check (signatures against the trusted root, version numbers never
going down, expiry, lengths and hashes named by the role above); this fetcher only finds the bytes:
``N.root.json`` is the tag ``tuf.N.root``, ``timestamp.json`` is ``tuf.timestamp`` and so on
(``media.tuf_tag``), each a one-layer artefact whose layer digest is checked as it is read. A tag the
registry does not hold is an HTTP 404 to the Updater, which is how it learns there is no newer root.
"""

from __future__ import annotations

from collections.abc import Iterator

from tuf.api.exceptions import DownloadHTTPError
from tuf.ngclient import FetcherInterface

from edge_runtime.fleet import media
from edge_runtime.fleet.registry import RegistryClient, RegistryNotFound

#: The Updater's URLs start with this; only the file name after it matters.
BASE_URL = "arc-oci://registry/"
MAX_METADATA_BYTES = 5_000_000  # UpdaterConfig.targets_max_length, the largest role it accepts


class RegistryFetcher(FetcherInterface):
    """Serves ``BASE_URL + FILE`` from the registry tag of FILE."""

    def __init__(self, client: RegistryClient) -> None:
        self.client = client

    def _fetch(self, url: str) -> Iterator[bytes]:
        if not url.startswith(BASE_URL):
            raise DownloadHTTPError(f"{url}: not a metadata URL of this fetcher", 404)
        name = url[len(BASE_URL):]
        try:
            tag = media.tuf_tag(name)
        except ValueError:
            raise DownloadHTTPError(f"{name}: not a TUF metadata file name", 404) from None
        try:
            data = self.client.get_file_artefact(tag, media.TUF_METADATA, MAX_METADATA_BYTES)
        except RegistryNotFound as exc:
            raise DownloadHTTPError(str(exc), 404) from None
        return iter([data])
