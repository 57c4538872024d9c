#!/usr/bin/env bash
# Builds the release binaries of every prebuilt platform package (packages/*/npm/linux-*-gnu/) and
# reports each package's packed and installed size. linux-x64-gnu: every addon, built for this host;
# linux-arm64-gnu: @attn/cpu's cpu-flash, cross-compiled by cross-build-cpu-arm64.sh (needs Debian's
# g++-aarch64-linux-gnu; --no-arm64 leaves it out, and the report then says it is missing). CI builds the default archs (80;90a) only; a
# release builds the list the prebuilt packages promise: SASS for sm80, sm86, sm89 and sm90a plus
# compute_90 PTX (see @attn/native's archs.ts). It needs Node.js, the installed node_modules and
# @attn/native's dist (pnpm install && pnpm build), cmake, g++ and nvcc, and nothing else: it runs on a
# GPU host with many cores too. Set ATTN_BUILD_JOBS to the core count (a 2-core machine takes hours).
# Usage: tools/release/build-prebuilts.sh [--sizes-only] [--no-arm64]   then publish with pnpm publish -r.
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes_only=false arm64=true
for arg in "$@"; do
  case "$arg" in
    --sizes-only) sizes_only=true ;;
    --no-arm64) arm64=false ;;
    *) echo "usage: tools/release/build-prebuilts.sh [--sizes-only] [--no-arm64]" >&2; exit 2 ;;
  esac
done
if [ "$sizes_only" = false ]; then
  node packages/native/bin/attn-native.mjs build ./packages/cpu ./packages/cuda ./packages/flash-cuda \
    ./packages/cutlass-memeff --archs release
  if [ "$arm64" = true ]; then tools/release/cross-build-cpu-arm64.sh; fi
fi
out=$(mktemp -d)
# The archs inside each binary: cuobjdump where the toolkit has it, else the sm_ names in its fatbins.
cuobjdump=$(command -v cuobjdump || ls "$(dirname "$(readlink -f "$(command -v nvcc)")")"/cuobjdump 2>/dev/null || true)
printf '%-38s %10s %10s  %s\n' package packed installed archs
for dir in packages/*/npm/linux-*-gnu; do
  name=$(node -p "require('./$dir/package.json').name")
  bin=$(ls "$dir"/*.node 2>/dev/null | head -1)
  if [ -z "$bin" ] && [ "$arm64" = false ] && [[ "$dir" == *-arm64-gnu ]]; then
    echo "$name: not built (--no-arm64)"
    continue
  fi
  [ -n "$bin" ] || { echo "$name: no binary in $dir (build it first)" >&2; exit 1; }
  # npm pack's tarball: the package folder gzipped (what `npm pack` would hold, without npm).
  tgz="$out/$(basename "$(dirname "$(dirname "$dir")")").tgz"
  tar -czf "$tgz" -C "$dir" .
  if [[ "$dir" == *-arm64-gnu ]]; then
    archs="aarch64 (neon, portable)"
  elif [ -n "$cuobjdump" ]; then
    archs=$("$cuobjdump" --list-elf "$bin" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | tr '\n' ' ' || true)
    archs+=$("$cuobjdump" --list-ptx "$bin" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | sed 's/^/ptx:/' | tr '\n' ' ' || true)
  else
    archs=$(strings "$bin" | grep -o '^sm_[0-9]*a\?$\|\.target sm_[0-9a-z]*' | sort -u | tr '\n' ' ' || true)
  fi
  node -e 'const [n, t, b, a] = process.argv.slice(1); const mb = (f) => (require("fs").statSync(f).size / 1048576).toFixed(1) + " MB";
    console.log(n.padEnd(38), mb(t).padStart(10), mb(b).padStart(10), "", a)' "$name" "$tgz" "$bin" "$archs"
done
rm -rf "$out"
