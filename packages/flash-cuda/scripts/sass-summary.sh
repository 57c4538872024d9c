#!/usr/bin/env bash
# SASS summary of the built addon's kernels, for the GPU host (it has cuobjdump; the build machine has
# not). One line per (arch, kernel): instruction counts over the whole kernel and inside its main loop
# (the backward branch that encloses the most HMMA), so register spills (LDL/STL) in the hot loop and
# the loop's instruction mix are visible without reading the disassembly.
#
#   bash packages/flash-cuda/scripts/sass-summary.sh [addon, default build/Release/flash_cuda.node] [filter]
#   filter: a substring of the short kernel name, e.g. 'd128' or 'fwd bf16' (default: every kernel)
#   SASS_DUMP=dir also writes each kernel's full SASS to dir/<arch>_<short name>.sass
#
# Columns: instr (all instructions), HMMA, LDSM (ldmatrix), LDGSTS (cp.async), LDG/STG, LDS/STS,
# LDL/STL (local memory: spills), BAR, EX2 (MUFU.EX2), SHFL; 'loop' repeats the counts for one pass of
# the main loop. Short names: fwd <dtype> d<D> <M>x<N> w<warps> [q] [lean] from the FwdTraits arguments.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
addon="${1:-$here/build/Release/flash_cuda.node}"
filter="${2:-}"
command -v cuobjdump >/dev/null || { echo "sass-summary: cuobjdump not found (it ships with the CUDA toolkit)" >&2; exit 2; }
[ -f "$addon" ] || { echo "sass-summary: no addon at $addon" >&2; exit 2; }
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
cuobjdump -sass "$addon" > "$tmp"
demangle=cat
command -v c++filt >/dev/null && demangle=c++filt
python3 - "$tmp" "$filter" "$demangle" "${SASS_DUMP:-}" <<'PY'
import os, re, subprocess, sys

path, filt, demangle, dump = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
OPS = [('HMMA', r'\bHMMA\b'), ('LDSM', r'\bLDSM\b'), ('LDGSTS', r'\bLDGSTS\b'), ('LDG', r'\bLDG\b'),
       ('STG', r'\bSTG\b'), ('LDS', r'\bLDS\b'), ('STS', r'\bSTS\b'), ('LDL', r'\bLDL\b'), ('STL', r'\bSTL\b'),
       ('BAR', r'\bBAR\b'), ('EX2', r'MUFU\.EX2'), ('SHFL', r'\bSHFL\b')]
INSTR = re.compile(r'/\*([0-9a-f]{4,})\*/\s+(.*?);')
BRA = re.compile(r'\bBRA\b.*?(0x[0-9a-f]+)')

def short(name):
    try:
        name = subprocess.run([demangle], input=name, capture_output=True, text=True).stdout.strip() or name
    except Exception:
        pass
    m = re.search(r'FwdTraits<(\d+), (\d+), (\d+), (\d+), (true|false), (__half|__nv_bfloat16)(?:, (true|false))?>', name)
    if m:
        d, bm, bn, w, q, e, extras = m.groups()
        tag = '' if 'flash_fwd_kernel' in name else ' [' + re.sub(r'.*::(\w+)<.*', r'\1', name.split('(')[0]) + ']'
        return (f"fwd {'bf16' if 'bfloat' in e else 'fp16'} d{d} {bm}x{bn} w{w}" + (' q' if q == 'true' else '') +
                (' lean' if extras == 'false' else '') + tag)
    m = re.search(r'(\w+_kernel)', name)
    base = m.group(1) if m else name[:40]
    args = re.findall(r'<([^<>]*)>', name)
    return f"{base}<{args[-1]}>" if args else base

kernels = []  # (arch, name, [(addr, text)])
arch, cur = '?', None
for line in open(path, errors='replace'):
    m = re.search(r'code for (sm_\w+)', line)
    if m:
        arch = m.group(1)
        continue
    m = re.search(r'Function : (\S+)', line)
    if m:
        cur = (arch, m.group(1), [])
        kernels.append(cur)
        continue
    m = INSTR.search(line)
    if m and cur is not None:
        cur[2].append((int(m.group(1), 16), m.group(2)))

def count(instrs):
    c = {k: 0 for k, _ in OPS}
    for _, t in instrs:
        for k, rx in OPS:
            if re.search(rx, t):
                c[k] += 1
    return c

def main_loop(instrs):
    best = None
    for i, (addr, t) in enumerate(instrs):
        m = BRA.search(t)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target >= addr:
            continue
        body = [x for x in instrs if target <= x[0] <= addr]
        h = sum(1 for _, tt in body if re.search(r'\bHMMA\b', tt))
        if h and (best is None or h > best[0]):
            best = (h, body)
    return best[1] if best else []

hdr = f"{'arch':7} {'kernel':52} {'instr':>6} " + ' '.join(f'{k:>6}' for k, _ in OPS) + '   | loop: ' + \
      ' '.join(f'{k:>5}' for k in ('instr', 'HMMA', 'LDSM', 'LDGSTS', 'LDL', 'STL', 'BAR', 'EX2'))
print(hdr)
for arch, name, instrs in kernels:
    s = short(name)
    if filt and filt not in s and filt not in name:
        continue
    c = count(instrs)
    loop = main_loop(instrs)
    lc = count(loop)
    print(f"{arch:7} {s[:52]:52} {len(instrs):6} " + ' '.join(f'{c[k]:6}' for k, _ in OPS) + '   |       ' +
          ' '.join(f'{v:5}' for v in (len(loop), lc['HMMA'], lc['LDSM'], lc['LDGSTS'], lc['LDL'], lc['STL'], lc['BAR'], lc['EX2'])))
    if dump:
        os.makedirs(dump, exist_ok=True)
        with open(os.path.join(dump, f"{arch}_{re.sub(r'[^A-Za-z0-9_.-]+', '_', s)}.sass"), 'w') as f:
            f.write(name + '\n' + '\n'.join(f'/*{a:04x}*/ {t}' for a, t in instrs) + '\n')
PY
