"""The build server's side of a fleet: TUF repository keys and metadata, publishing bundles to an OCI
registry, and ranking what devices missed (``heat``) so the next build covers it."""
