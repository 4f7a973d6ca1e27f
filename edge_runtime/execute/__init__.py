"""IS3, execute: compiled entry code in confined worker processes, and the wire protocol to them."""
