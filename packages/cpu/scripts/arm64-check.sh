#!/usr/bin/env bash
# cpu-flash on arm64 without arm64 hardware: cross-compiles the addon and cpu_flash_check (the kernels'
# conformance driver, native/test/check_driver.cpp) for linux-arm64 with tools/release/
# cross-build-cpu-arm64.sh, then runs the driver under qemu-user on two emulated CPUs:
#   cortex-a53  ARMv8.0 with NEON only: the binary uses nothing newer than the base architecture;
#   max         every extension qemu has, SVE at qemu's default 512-bit length: sve256 is not runnable,
#               auto takes neon;
#   max, 256-bit SVE (Neoverse V1's length): the sve256 kernels run too.
# The driver checks every runnable level (portable, neon, and sve256 where the length is 256 bits) on the forward's conformance subset
# (S 1, 17, 100 for queries and keys; D 8, 72; Hq 4, Hk 2; causal or not; fp32 and bf16) against a
# float64 reference with the accuracy rule of test/conformance; it exits 1 on any failure.
# (A Node.js for arm64 would run @attn/cpu's own tests; Debian bookworm's nodejs:arm64 is 18.20,
# below @attn/cpu's engines (>= 20.19), and replaces the host's amd64 nodejs as it is not co-installable.)
# Needs, installs none: cmake; aarch64-linux-gnu-g++ (Debian: apt-get install g++-aarch64-linux-gnu);
# qemu-aarch64 (apt-get install qemu-user, or qemu-user-static); Node.js with `pnpm install` done.
# Usage: packages/cpu/scripts/arm64-check.sh [--seed N]   (extra arguments go to the driver)
set -euo pipefail
cd "$(dirname "$0")/../../.."
missing=()
command -v aarch64-linux-gnu-g++ >/dev/null || missing+=("aarch64-linux-gnu-g++ (apt-get install g++-aarch64-linux-gnu)")
qemu=$(command -v qemu-aarch64 || command -v qemu-aarch64-static || true)
[ -n "$qemu" ] || missing+=("qemu-aarch64 (apt-get install qemu-user, or qemu-user-static)")
command -v cmake >/dev/null || missing+=("cmake")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'arm64-check: needs %s\n' "${missing[@]}" >&2
  exit 1
fi
tools/release/cross-build-cpu-arm64.sh --check-driver
build=packages/cpu/build/linux-arm64-gnu
# The addon itself: an AArch64 shared object whose only undefined symbols are Node-API's and the C
# and C++ runtimes' (Node provides napi_* when it loads the file).
addon=packages/cpu/npm/linux-arm64-gnu/cpu_flash.node
aarch64-linux-gnu-readelf -h "$addon" | grep -q 'Machine:.*AArch64' || { echo "arm64-check: $addon is not AArch64" >&2; exit 1; }
echo "arm64-check: $addon: AArch64; needs $(aarch64-linux-gnu-readelf -d "$addon" | grep -o 'NEEDED.*' | grep -o '\[.*\]' | tr '\n' ' ')"
sysroot=/usr/aarch64-linux-gnu
status=0
for cpu in cortex-a53 max max,sve-default-vector-length=32; do
  echo "arm64-check: qemu-aarch64 -cpu $cpu"
  log="$build/check-${cpu%%,*}.log"
  if [[ "$cpu" == *,* ]]; then log="$build/check-${cpu%%,*}-sve256.log"; fi
  rc=0
  "$qemu" -cpu "$cpu" -L "$sysroot" "$build/cpu_flash_check" "$@" >"$log" 2>&1 || rc=$?
  # The failures, the header and the summary (every case's line is in the log).
  grep -v '^PASS' "$log" || true
  for isa in neon sve256; do
    grep -q "^PASS $isa" "$log" || continue
    echo "arm64-check: worst $isa case: $(grep "^PASS $isa" "$log" | awk '{ r = $(NF - 7) / $(NF - 5); if (r > w) { w = r; l = $0 } } END { printf "out err %.2f of its bound: %s", w, l }')"
  done
  [ "$rc" = 0 ] || status=1
done
exit $status
