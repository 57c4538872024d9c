#!/usr/bin/env bash
# Compile native/aotriton_shim.cpp against real AOTriton headers, with the defines and include paths
# of this package's CMake build (attn_hip_addon + attn_node_addon_target), without linking: it checks
# every field name, type and signature the shim uses. Needs hipcc (Debian's `apt-get install hipcc`
# is enough) and `pnpm install` (node-addon-api and node-api-headers). No GPU, no AOTriton library.
#
#   scripts/check-headers.sh DIR...                 DIR: an AOTriton install prefix (include/aotriton/config.h)
#                                                   or source tree (CMakeLists.txt, include/aotriton/config.h.in)
#   scripts/check-headers.sh --git REPO REF...      each REF of an AOTriton git repository (e.g. 0.10b 0.11b 0.11.2b),
#                                                   exported to a temporary folder (never into this repository)
#   Leading options: --arch GFX (default gfx90a), --compile (compile to an object instead of -fsyntax-only).
# Environment: HIPCC (default hipcc).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
hipcc="${HIPCC:-hipcc}"
arch=gfx90a
mode=-fsyntax-only
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch="$2"; shift 2 ;;
    --compile) mode=-c; shift ;;
    *) break ;;
  esac
done
work="$(mktemp -d "${TMPDIR:-/tmp}/attn-aotriton-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT

command -v "$hipcc" >/dev/null || { echo "check-headers: $hipcc not found (apt-get install hipcc, or set HIPCC)" >&2; exit 2; }
resolve() { (cd "$here" && node -e "$1"); }
napi_headers="$(resolve "const {createRequire}=require('module');const r=createRequire(require.resolve('cmake-js/package.json'));console.log(require('path').dirname(r.resolve('node-api-headers/package.json'))+'/include')")"
addon_api="$(resolve "console.log(require('path').dirname(require.resolve('node-addon-api/package.json')))")"
native_dir="$(resolve "console.log(require('path').dirname(require.resolve('@attn/native/package.json')))")"
rocm_dir="$(resolve "console.log(require('path').dirname(require.resolve('@attn/rocm/package.json')))")"
cuda_dir="$(cd "$rocm_dir" && node -e "console.log(require('path').dirname(require.resolve('@attn/cuda/package.json')))")"

# config.h as AOTriton's CMake writes it (configure_file of include/aotriton/config.h.in): versions with
# a 'u' suffix, AOTRITON_GIT_SHA1 as a bare token (not a string), no namespace suffix.
generate_config() { # SRC OUTDIR SHA
  local src="$1" out="$2" sha="$3" major minor patch
  major=$(sed -n -E 's/^set\(AOTRITON_VERSION_MAJOR_INT ([0-9]+)\)/\1/p' "$src/CMakeLists.txt")
  minor=$(sed -n -E 's/^set\(AOTRITON_VERSION_MINOR_INT ([0-9]+)\)/\1/p' "$src/CMakeLists.txt")
  patch=$(sed -n -E 's/^set\(AOTRITON_VERSION_PATCH_INT ([0-9]+)\)/\1/p' "$src/CMakeLists.txt")
  [ -n "$major" ] && [ -n "$minor" ] && [ -n "$patch" ] || { echo "check-headers: no version in $src/CMakeLists.txt" >&2; return 1; }
  mkdir -p "$out/aotriton"
  sed -E \
    -e 's/^#cmakedefine01 AOTRITON_ENABLE_SUFFIX$/#define AOTRITON_ENABLE_SUFFIX 0/' \
    -e 's/^#cmakedefine AOTRITON_NAME_SUFFIX .*$/\/* #undef AOTRITON_NAME_SUFFIX *\//' \
    -e "s/^#cmakedefine AOTRITON_VERSION_MAJOR .*$/#define AOTRITON_VERSION_MAJOR ${major}u/" \
    -e "s/^#cmakedefine AOTRITON_VERSION_MINOR .*$/#define AOTRITON_VERSION_MINOR ${minor}u/" \
    -e "s/^#cmakedefine AOTRITON_VERSION_PATCH .*$/#define AOTRITON_VERSION_PATCH ${patch}u/" \
    -e "s/^#cmakedefine AOTRITON_GIT_SHA1 .*$/#define AOTRITON_GIT_SHA1 ${sha}/" \
    -e 's/@AOTRITON_NAME_SUFFIX@//g' \
    "$src/include/aotriton/config.h.in" >"$out/aotriton/config.h"
  if grep -q '#cmakedefine\|@[A-Z_]*@' "$out/aotriton/config.h"; then
    echo "check-headers: config.h.in has entries this script does not know:" >&2; grep -n '#cmakedefine\|@[A-Z_]*@' "$out/aotriton/config.h" >&2; return 1
  fi
  echo "AOTriton ${major}.${minor}.${patch}"
}

check_one() { # DIR LABEL SHA
  local dir="$1" label="$2" sha="${3:-0000000000000000000000000000000000000000}" gen="$work/gen-$RANDOM" version
  local includes=()
  if [ -f "$dir/include/aotriton/config.h" ]; then
    version="installed headers"
  elif [ -f "$dir/include/aotriton/config.h.in" ] && [ -f "$dir/CMakeLists.txt" ]; then
    version="$(generate_config "$dir" "$gen" "$sha")" || return 1
    includes+=("-I$gen")
  else
    echo "check-headers: $dir has neither include/aotriton/config.h nor a source tree's config.h.in + CMakeLists.txt" >&2; return 1
  fi
  includes+=("-I$dir/include" "-I$napi_headers" "-I$addon_api" "-I$native_dir/include" "-I$cuda_dir/native/include" "-I$here/native")
  local cmd=(env HIP_PLATFORM=amd "$hipcc" -x hip "--offload-arch=$arch" -std=c++17 "$mode" -fexceptions -Wall -Werror -Wno-unused-command-line-argument
    -DATTN_HIP -D__HIP_PLATFORM_AMD__ "-DATTN_ROCM_ARCHS_STRING=\"$arch\"" "-DATTN_CUDA_ARCHS_STRING=\"$arch\""
    -DNAPI_VERSION=8 -DNODE_ADDON_API_CPP_EXCEPTIONS -DNODE_ADDON_API_DISABLE_DEPRECATED
    "${includes[@]}" "$here/native/aotriton_shim.cpp" -o "$work/aotriton_shim.o")
  echo "== $label ($version, sha $sha)"
  echo "+ ${cmd[*]}"
  if "${cmd[@]}"; then echo "OK: aotriton_shim.cpp compiles against $label"; else echo "FAIL: aotriton_shim.cpp against $label" >&2; return 1; fi
}

status=0
if [ "${1:-}" = "--git" ]; then
  [ $# -ge 3 ] || { echo "usage: $0 --git REPO REF..." >&2; exit 2; }
  repo="$2"; shift 2
  for ref in "$@"; do
    sha="$(git -C "$repo" rev-parse "$ref^{commit}")"
    src="$work/src-$sha"; mkdir -p "$src"
    git -C "$repo" archive "$sha" include CMakeLists.txt | tar -x -C "$src"
    check_one "$src" "$ref" "$sha" || status=1
  done
else
  [ $# -ge 1 ] || { sed -n '2,12p' "$0"; exit 2; }
  for dir in "$@"; do check_one "$dir" "$dir" || status=1; done
fi
exit $status
