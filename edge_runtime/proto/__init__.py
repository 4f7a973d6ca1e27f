"""Generated gRPC stubs for proto/arc/edge/v1/edge.proto (scripts/gen_proto.py)."""
