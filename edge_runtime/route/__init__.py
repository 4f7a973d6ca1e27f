"""IS1, route: which entries could a question be? The skeleton index, the embedders and the HNSW router."""
