#!/usr/bin/env bash
# Cross-compiles @attn/cpu's cpu-flash addon for linux-arm64 (glibc) on an x86-64 host and copies it
# into the prebuilt package packages/cpu/npm/linux-arm64-gnu/ (published as @attn/cpu-linux-arm64-gnu).
# The same CMakeLists.txt as `attn-native build` runs, configured by plain cmake with
# aarch64-linux-gnu.cmake (cmake-js only builds for the Node it runs on); on Linux a Node addon links
# against nothing from Node, so the Node-API headers (node-api-headers, cmake-js's dependency) and
# node-addon-api are all it needs.
# Needs: cmake, aarch64-linux-gnu-g++ (Debian: apt-get install g++-aarch64-linux-gnu), Node.js and the
# installed node_modules (pnpm install). Installs nothing.
# Usage: tools/release/cross-build-cpu-arm64.sh [--check-driver]
#   --check-driver  also builds cpu_flash_check (packages/cpu/native/test/check_driver.cpp), which
#                   packages/cpu/scripts/arm64-check.sh runs under qemu-user.
# Build folder: packages/cpu/build/linux-arm64-gnu (git-ignored). Jobs: $ATTN_BUILD_JOBS, else nproc.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
driver=OFF
[ "${1:-}" = "--check-driver" ] && driver=ON
for tool in cmake aarch64-linux-gnu-g++ node; do
  command -v "$tool" >/dev/null || {
    echo "cross-build-cpu-arm64: needs $tool (cmake; g++-aarch64-linux-gnu for aarch64-linux-gnu-g++; Node.js)" >&2
    exit 1
  }
done
resolve() {  # folder of an npm package as packages/cpu sees it ($2: resolve from that package's folder)
  (cd packages/cpu && node -e 'const fs = require("fs"), p = require("path"); const from = process.argv[2] ? fs.realpathSync(process.argv[2]) : ".";
    console.log(p.dirname(require.resolve(process.argv[1] + "/package.json", { paths: [from] })))' "$1" "${2:-}")
}
addon_api=$(resolve node-addon-api) || { echo "cross-build-cpu-arm64: node-addon-api not installed (pnpm install)" >&2; exit 1; }
napi_headers=$(resolve node-api-headers node_modules/cmake-js)/include
build=packages/cpu/build/linux-arm64-gnu
jobs=${ATTN_BUILD_JOBS:-$(nproc)}
started=$(date +%s.%N)
mkdir -p "$build"
cmake -S packages/cpu -B "$build" -DCMAKE_TOOLCHAIN_FILE="$root/tools/release/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DATTN_DIR_NATIVE="$root/packages/native" -DATTN_NODE_ADDON_API_DIR="$addon_api" \
  -DCMAKE_JS_INC="$napi_headers" -DATTN_CPU_CHECK_DRIVER=$driver >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j "$jobs"
seconds=$(node -e 'console.log((Date.now() / 1000 - Number(process.argv[1])).toFixed(1))' "$started")
dest=packages/cpu/npm/linux-arm64-gnu
cp "$build/cpu_flash.node" "$dest/cpu_flash.node"
# The newest glibc symbol version the binary needs: the oldest distribution it loads on.
glibc=$(aarch64-linux-gnu-objdump -T "$dest/cpu_flash.node" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
echo "cross-build-cpu-arm64: $dest/cpu_flash.node ($(du -k "$dest/cpu_flash.node" | cut -f1) KB, needs $glibc) in ${seconds} s with $jobs jobs"
