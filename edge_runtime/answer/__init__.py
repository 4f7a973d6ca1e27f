"""IS4, answer: the answer under the entry's key, its domain, the narration, the response on the contract."""
