#!/usr/bin/env bash
# Prepares a run on a GPU host that has no Node.js and reaches no package registry (the project's
# packing for tools/gpu/run-suite.sh and `attn bench` there).
# Packs, into .gpu/ at the repo root (kept out of git through .git/info/exclude):
#   node.xz         this machine's Node.js binary
#   bundle.tar.xz   every ignored node_modules/, dist/ and build/ folder (installed deps, builds, addons)
#   run.sh          the host-side entry: unpacks both, puts node on PATH, runs your command from the root
# On the GPU host, with .gpu/ beside the tree:
#   bash .gpu/run.sh node node_modules/vitest/vitest.mjs run packages/flash-cuda
# Install and build here first: the CUDA addons are compiled here with nvcc; the host only runs them.
# Usage: pack.sh [--exclude GLOB]... [--xz-level N]
#   --exclude: extra tar excludes, to drop what a run does not need;
#   --xz-level: the bundle's xz preset (default 6); 9 packs it about 5% smaller in a minute more on 2 cores, for
#   carries that hold prebuilt addons.
set -euo pipefail
root=$(git rev-parse --show-toplevel); cd "$root"
exclude=$(git rev-parse --git-path info/exclude)  # a worktree's .git is a file: ask git where info/ lives
mkdir -p "$(dirname "$exclude")"; grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
mkdir -p .gpu
xz_level=6
excludes=(--exclude='node_modules/.pnpm/nx@*' --exclude='node_modules/.pnpm/@nx+*'
          --exclude='node_modules/.pnpm/typescript@*' --exclude='node_modules/.pnpm/@napi-rs+wasm-runtime*'
          --exclude='*.o' --exclude='*.a' --exclude='.gpu' --exclude='CMakeFiles' --exclude='.cache' --exclude='.nx'
          --exclude='tools/registry/verdaccio/node_modules')
while [ $# -gt 0 ]; do
  case "$1" in
    --exclude) excludes+=(--exclude="$2"); shift 2;;
    --xz-level) xz_level=$2; shift 2;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done

node_bin=$(command -v node); ver=$("$node_bin" --version)
if [ ! -f .gpu/node.version ] || [ "$(cat .gpu/node.version)" != "$ver" ]; then
  xz -T2 -6 -c "$node_bin" > .gpu/node.xz; echo "$ver" > .gpu/node.version
fi
mapfile -t paths < <(git status --ignored --porcelain=v1 -uall --ignored=matching 2>/dev/null \
  | sed -n 's/^!! //p' | grep -E '(^|/)(node_modules|dist|build)/?$' | grep -v '^\.gpu' | sort -u)
if [ ${#paths[@]} -eq 0 ]; then echo "nothing ignored to pack: install and build first" >&2; exit 1; fi
tar -cf - "${excludes[@]}" "${paths[@]}" | xz -T2 "-$xz_level" > .gpu/bundle.tar.xz
cat > .gpu/run.sh <<'RUN'
#!/usr/bin/env bash
# GPU-host side: unpack Node.js and the bundle once, then run the given command from the repo root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(dirname "$here")
mkdir -p "$here/bin"
[ -x "$here/bin/node" ] || { xz -dc "$here/node.xz" > "$here/bin/node"; chmod +x "$here/bin/node"; }
export PATH="$here/bin:$PATH"
cd "$root"
[ -f "$here/.unpacked" ] || { tar -xJf "$here/bundle.tar.xz"; touch "$here/.unpacked"; }
exec "$@"
RUN
chmod +x .gpu/run.sh; rm -f .gpu/.unpacked
total=$(du -cb .gpu/node.xz .gpu/bundle.tar.xz | tail -1 | cut -f1)
tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
echo "packed ${#paths[@]} ignored paths: .gpu is $((total/1048576)) MiB, tree $((tree/1048576)) MiB (64 MiB together at most)"
[ $((total + tree)) -lt $((62*1048576)) ] || { echo "too big for one run: --exclude what the run does not need" >&2; exit 1; }
