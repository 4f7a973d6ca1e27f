"""The device's server: runtime state, the gRPC service and server, client, metrics, miss log, upstream."""
