#!/usr/bin/env bash
# Check the CK shim (native/ck_shim.cpp, ck_fwd.cpp, ck_bwd.cpp) against a Composable Kernel tree: every traits/args field the shim sets
# must exist with a compatible type in that CK's example/ck_tile/01_fmha/fmha_{fwd,bwd}.hpp. Uses
# the defines and include paths of this package's CMake build (attn_hip_addon, CK_INCLUDE_DIR,
# CK_FMHA_DIR). No GPU, no generate.py, no kernel instances: the shim only includes the two headers.
#
#   scripts/check-headers.sh CK_ROOT...             a composable_kernel checkout (include/ck_tile, example/ck_tile/01_fmha)
#   scripts/check-headers.sh --git REPO REF...      each REF of a CK git repository, exported to a temporary folder
#
# A hipcc older than the CK tree (Debian 12's: HIP 5.2, clang 15) fails inside CK's own headers
# (missing __builtin_amdgcn_* builtins, constexpr and static_assert failures in its math and gemm
# policies). Clang keeps type-checking the rest of the file after such errors, so the check passes
# when no error is located in the shim's files and every error inside CK's headers is one of those
# compiler-age kinds (listed); any other error in CK's headers (a redefinition, say) fails.
#   Leading option: --arch GFX (default gfx90a: Debian's clang 15 knows no gfx942).
# Environment: HIPCC (default hipcc).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
hipcc="${HIPCC:-hipcc}"
arch=gfx90a
if [ "${1:-}" = --arch ]; then arch="$2"; shift 2; fi
work="$(mktemp -d "${TMPDIR:-/tmp}/attn-ck-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
command -v "$hipcc" >/dev/null || { echo "check-headers: $hipcc not found (apt-get install hipcc, or set HIPCC)" >&2; exit 2; }
resolve() { (cd "$here" && node -e "$1"); }
napi_headers="$(resolve "const {createRequire}=require('module');const r=createRequire(require.resolve('cmake-js/package.json'));console.log(require('path').dirname(r.resolve('node-api-headers/package.json'))+'/include')")"
addon_api="$(resolve "console.log(require('path').dirname(require.resolve('node-addon-api/package.json')))")"
native_dir="$(resolve "console.log(require('path').dirname(require.resolve('@attn/native/package.json')))")"
rocm_dir="$(resolve "console.log(require('path').dirname(require.resolve('@attn/rocm/package.json')))")"
cuda_dir="$(cd "$rocm_dir" && node -e "console.log(require('path').dirname(require.resolve('@attn/cuda/package.json')))")"

# Errors inside CK's headers that only mean "this clang is older than this CK".
old_compiler='__builtin_amdgcn_[a-z_0-9]*|never produces a constant expression|static assertion failed|unknown target CPU|no matching function for call to .__builtin_amdgcn'

check_one() { # CK_ROOT LABEL
  local root="$1" label="$2" rc=0 src log
  [ -f "$root/include/ck_tile/ops/fmha.hpp" ] && [ -f "$root/example/ck_tile/01_fmha/fmha_fwd.hpp" ] ||
    { echo "check-headers: $root is not a composable_kernel tree (include/ck_tile/ops/fmha.hpp, example/ck_tile/01_fmha/fmha_fwd.hpp)" >&2; return 1; }
  echo "== $label"
  for src in ck_shim.cpp ck_fwd.cpp ck_bwd.cpp; do
    log="$work/log-$src-$RANDOM"
    # Host pass only: the shim is host code; the device pass only re-parses CK's kernels.
    local cmd=(env HIP_PLATFORM=amd "$hipcc" -x hip "--offload-arch=$arch" --cuda-host-only -std=c++17 -fsyntax-only
      -ferror-limit=0 -fexceptions -Wall -Wno-unused-command-line-argument
      -DATTN_HIP -D__HIP_PLATFORM_AMD__ "-DATTN_ROCM_ARCHS_STRING=\"$arch\"" "-DATTN_CUDA_ARCHS_STRING=\"$arch\""
      "-DATTN_CK_FMHA_DIR=\"$root/example/ck_tile/01_fmha\"" -DCK_TILE_FMHA_FWD_FAST_EXP2=1 -Wno-undefined-func-template
      -DNAPI_VERSION=8 -DNODE_ADDON_API_CPP_EXCEPTIONS -DNODE_ADDON_API_DISABLE_DEPRECATED
      "-I$napi_headers" "-I$addon_api" "-I$native_dir/include" "-I$cuda_dir/native/include"
      "-I$root/include" "-I$root/example/ck_tile/01_fmha" "-I$here/native" "$here/native/$src")
    echo "+ ${cmd[*]}"
    "${cmd[@]}" >"$log" 2>&1 || true
    local ours ck other
    ours=$(grep -E "^$here/native/[^:]+:[0-9]+:[0-9]+: (error|warning):" "$log" || true)
    ck=$(grep -E "^$root/[^:]+:[0-9]+:[0-9]+: error:" "$log" || true)
    other=$(grep -E ": error:" "$log" | grep -vE "^$here/native/|^$root/" || true)
    if [ -n "$ours" ] || [ -n "$other" ]; then
      printf '%s\n' "$ours" "$other" | sed '/^$/d'; echo "FAIL: $src"; rc=1; continue
    fi
    if [ -n "$ck" ]; then
      local unexpected
      unexpected=$(printf '%s\n' "$ck" | grep -vE "$old_compiler" || true)
      if [ -n "$unexpected" ]; then
        printf '%s\n' "$unexpected" | sed "s|^$root/||"; echo "FAIL: $src (errors in CK's headers that are not about this compiler's age)"; rc=1; continue
      fi
      echo "note: $src: $(printf '%s\n' "$ck" | wc -l) errors inside CK's headers, all compiler-age kinds (this hipcc is older than the CK tree), e.g.:"
      printf '%s\n' "$ck" | sed -E "s|^$root/||; s|:[0-9]+:[0-9]+:|:|" | sort -u | head -3 | sed 's/^/  /'
    fi
    echo "OK: $src"
  done
  [ $rc = 0 ] && echo "OK: every field the shim uses exists in $label's fmha_fwd.hpp/fmha_bwd.hpp, with compatible types"
  return $rc
}

# native/head_group_sum.hip includes no CK header: compiled once, host and device, to an object.
check_kernel() {
  local cmd=(env HIP_PLATFORM=amd "$hipcc" -x hip "--offload-arch=$arch" -std=c++17 -c -Wall -Werror -Wno-unused-command-line-argument
    -D__HIP_PLATFORM_AMD__ "$here/native/head_group_sum.hip" -o "$work/head_group_sum.o")
  echo "+ ${cmd[*]}"
  if "${cmd[@]}"; then echo "OK: head_group_sum.hip"; else echo "FAIL: head_group_sum.hip"; return 1; fi
}

status=0
check_kernel || status=1
if [ "${1:-}" = "--git" ]; then
  [ $# -ge 3 ] || { echo "usage: $0 --git REPO REF..." >&2; exit 2; }
  repo="$2"; shift 2
  for ref in "$@"; do
    sha="$(git -C "$repo" rev-parse "$ref^{commit}")"
    src="$work/src-$sha"; mkdir -p "$src"
    git -C "$repo" archive "$sha" include/ck_tile example/ck_tile/01_fmha | tar -x -C "$src"
    check_one "$src" "$ref ($sha)" || status=1
  done
else
  [ $# -ge 1 ] || { sed -n '2,15p' "$0"; exit 2; }
  for root in "$@"; do check_one "$root" "$root" || status=1; done
fi
exit $status
