"""Signed bundles on the device: the reader, the content-addressed blob store, versions."""
