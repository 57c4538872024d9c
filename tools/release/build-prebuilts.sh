#!/usr/bin/env bash
# Builds the release binaries of every prebuilt platform package (packages/*/npm/linux-x64-gnu/) and
# reports each package's packed and installed size. CI builds the default archs (80;90a) only; a
# release builds the list the prebuilt packages promise: SASS for sm80, sm86, sm89 and sm90a plus
# compute_90 PTX (see @attn/native's archs.ts). On a 2-core machine this takes about an hour.
# Usage: tools/release/build-prebuilts.sh [--sizes-only]   then publish with pnpm publish -r.
set -euo pipefail
cd "$(dirname "$0")/../.."
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false
if [ "${1:-}" != "--sizes-only" ]; then
  ATTN_CUDA_ARCHS=release pnpm exec nx run-many -t build:native --skip-nx-cache --parallel 1 \
    -p @attn/cpu @attn/cuda @attn/flash-cuda @attn/cutlass-memeff
fi
out=$(mktemp -d)
# The archs inside each binary: cuobjdump where the toolkit has it, else the sm_ names in its fatbins.
cuobjdump=$(command -v cuobjdump || ls "$(dirname "$(readlink -f "$(command -v nvcc)")")"/cuobjdump 2>/dev/null || true)
printf '%-38s %10s %10s  %s\n' package packed installed archs
for dir in packages/*/npm/linux-x64-gnu; do
  name=$(node -p "require('./$dir/package.json').name")
  bin=$(ls "$dir"/*.node 2>/dev/null | head -1)
  [ -n "$bin" ] || { echo "$name: no binary in $dir (build it first)" >&2; exit 1; }
  tgz=$(cd "$dir" && pnpm pack --pack-destination "$out" | tail -1)
  if [ -n "$cuobjdump" ]; then
    archs=$("$cuobjdump" --list-elf "$bin" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | tr '\n' ' ' || true)
    archs+=$("$cuobjdump" --list-ptx "$bin" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | sed 's/^/ptx:/' | tr '\n' ' ' || true)
  else
    archs=$(strings "$bin" | grep -o '^sm_[0-9]*a\?$\|\.target sm_[0-9a-z]*' | sort -u | tr '\n' ' ' || true)
  fi
  node -e 'const [n, t, b, a] = process.argv.slice(1); const mb = (f) => (require("fs").statSync(f).size / 1048576).toFixed(1) + " MB";
    console.log(n.padEnd(38), mb(t).padStart(10), mb(b).padStart(10), "", a)' "$name" "$tgz" "$bin" "$archs"
done
rm -rf "$out"
