#!/bin/sh
# Build llama.cpp's own `llama-server` from the llama.cpp sources that the pinned llama-cpp-python vendors, so the
# server we measure at concurrency > 1 (parallel slots, continuous batching) is the same llama.cpp as the
# in-process probe. No PyPI package ships llama-server for Linux x86 with a pinned llama.cpp; building the vendored
# copy keeps one version. Usage: build_llama_server.sh VERSION DEST_DIR [extra cmake args...]
set -eu
VERSION="$1"; DEST="$2"; shift 2
PY="${PY:-python3}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
echo ">>> [1/3] fetching the llama-cpp-python $VERSION sources (its vendored llama.cpp) from PyPI"
"$PY" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$WORK"
tar xzf "$WORK"/llama_cpp_python-"$VERSION".tar.gz -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
echo ">>> [2/3] configuring llama-server (CPU, no HTTPS, no downloads)"
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF "$@" >"$WORK/configure.log" \
  || { tail -20 "$WORK/configure.log" >&2; exit 1; }
JOBS="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
echo ">>> [3/3] compiling llama-server with $JOBS jobs (5-10 min on 2 cores; progress in %)"
cmake --build "$WORK/build" --target llama-server -j "$JOBS" 2>&1 | grep --line-buffered -o '^\[ *[0-9]*%\]' | uniq \
  | awk '{ printf "\r    %s", $0; fflush() } END { print "" }'
test -x "$WORK/build/bin/llama-server" || { echo "error: llama-server was not built" >&2; exit 1; }
rm -rf "$DEST.part" && mkdir -p "$DEST.part"
cp "$WORK/build/bin/llama-server" "$DEST.part/"
echo "$VERSION" >"$DEST.part/llama-cpp-python-version"
"$DEST.part/llama-server" --version >"$DEST.part/version.txt" 2>&1 || true
rm -rf "$DEST" && mv "$DEST.part" "$DEST"
echo ">>> llama-server ready in $DEST"
