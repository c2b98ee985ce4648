#!/bin/sh
# One CMake build of the llama.cpp that the pinned llama-cpp-python vendors, making both llama.cpp's own
# `llama-server` (measured above concurrency 1: parallel slots, continuous batching) and the shared libraries
# (libllama, libggml*, libmtmd) that llama-cpp-python loads. ggml is compiled once. llama-cpp-python itself is then
# installed as a wheel built with -DLLAMA_BUILD=OFF (Python only) and reads these libraries (probes/builds.py links
# them into its llama_cpp/lib, the folder 0.3.36 loads libllama from unless LLAMA_CPP_LIB_PATH says otherwise).
# Usage: build_llama_cpp.sh VERSION DEST_DIR [extra cmake args...]. Output is the build log: probes/builds.py reads
# its step lines (">>> [k/4]") and CMake's "[ NN%]" lines for progress.
set -eu
VERSION="$1"; DEST="$2"; shift 2
PY="${PY:-python3}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
echo ">>> [1/4] fetching the llama-cpp-python $VERSION sources (its vendored llama.cpp) from PyPI"
"$PY" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$WORK" 2>&1 \
  | grep -v "^WARNING: Location" || true
tar xzf "$WORK"/llama_cpp_python-"$VERSION".tar.gz -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
echo ">>> [2/4] configuring llama.cpp (CPU, shared libraries, llama-server; no HTTPS, no downloads)"
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN' \
  -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF "$@" >"$WORK/configure.log" 2>&1 \
  || { tail -20 "$WORK/configure.log"; exit 1; }
JOBS="${BUILD_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}"
echo ">>> [3/4] compiling ggml, libllama, libmtmd and llama-server with $JOBS jobs"
cmake --build "$WORK/build" --target llama-server mtmd llama ggml -j "$JOBS" 2>&1
test -x "$WORK/build/bin/llama-server" || { echo "error: llama-server was not built"; exit 1; }
test -f "$WORK/build/bin/libllama.so" || { echo "error: libllama.so was not built"; exit 1; }
echo ">>> [4/4] installing into $DEST"
rm -rf "$DEST.part" && mkdir -p "$DEST.part"
cp "$WORK/build/bin/llama-server" "$DEST.part/"
cp -P "$WORK/build/bin/"*.so* "$DEST.part/"
echo "$VERSION" >"$DEST.part/llama-cpp-python-version"
"$DEST.part/llama-server" --version >"$DEST.part/version.txt" 2>&1 || true
rm -rf "$DEST" && mv "$DEST.part" "$DEST"
echo ">>> llama.cpp ready in $DEST"
