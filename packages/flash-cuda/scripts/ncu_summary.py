"""Summarizes ncu --csv --page details exports (scripts/ncu-vs-cudnn.sh): per kernel, its duration, SM and
memory throughput, issue-slot use, tensor-pipe use and the five largest stall reasons (cycles per issued
instruction). Prints a table per file and writes the same as JSON beside each CSV.

  python3 packages/flash-cuda/scripts/ncu_summary.py A.csv [B.csv ...]
"""
import csv
import io
import json
import re
import sys

KEYS = {
    "Duration": "duration",
    "Compute (SM) Throughput": "sm_pct",
    "Memory Throughput": "mem_pct",
    "Issue Slots Busy": "issue_pct",
    "Issued Ipc Active": "ipc",
    "No Eligible": "no_eligible_pct",
    "Active Warps Per Scheduler": "warps_per_scheduler",
    "Eligible Warps Per Scheduler": "eligible_per_scheduler",
    "Warp Cycles Per Issued Instruction": "cycles_per_issue",
    "Registers Per Thread": "registers",
}


US_PER = {"ns": 1e-3, "nsecond": 1e-3, "us": 1, "usecond": 1, "ms": 1e3, "msecond": 1e3}  # Duration units, in us


def rows_of(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    start = text.find('"ID"')  # ncu prints the program's own output and its ==PROF== lines first
    return list(csv.DictReader(io.StringIO(text[start:]))) if start >= 0 else []


def summarize(path):
    kernels = {}
    for r in rows_of(path):
        k = kernels.setdefault(r["ID"], {"kernel": r["Kernel Name"][:90], "grid": r.get("Grid Size"), "block": r.get("Block Size"), "stalls": {}})
        name, unit, value = r["Metric Name"], r.get("Metric Unit", ""), r["Metric Value"].replace(",", "")
        try:
            num = float(value)
        except ValueError:
            continue
        if name in KEYS:
            k[KEYS[name]] = num * US_PER.get(unit, 1) if name == "Duration" else num
        m = re.match(r"smsp__average_warps_issue_stalled_(.*)_per_issue_active\.ratio", name)
        if m:
            k["stalls"][m.group(1)] = num
        m = re.match(r"sm__pipe_tensor_op_(.*)_cycles_active\.avg\.pct_of_peak_sustained_active", name)
        if m:
            k[f"tensor_{m.group(1)}_pct"] = num
    out = list(kernels.values())
    print(f"== {path}")
    for k in out:
        top = sorted(k["stalls"].items(), key=lambda x: -x[1])[:5]
        tensor = " ".join(f"{n[7:-4]} {v:.1f}%" for n, v in k.items() if n.startswith("tensor_") and v > 0)
        print(
            f"{k['kernel']}\n   {k.get('duration', 0):.1f} us, grid {k['grid']} block {k['block']}, regs {k.get('registers')}; "
            f"SM {k.get('sm_pct')}%, mem {k.get('mem_pct')}%, issue slots {k.get('issue_pct')}%, tensor {tensor or '-'}; "
            f"warps/scheduler {k.get('warps_per_scheduler')} (eligible {k.get('eligible_per_scheduler')}), "
            f"cycles/issue {k.get('cycles_per_issue')}\n   stalls (cycles per issue): "
            + ", ".join(f"{n} {v:.2f}" for n, v in top)
        )
    with open(re.sub(r"\.csv$", "", path) + ".summary.json", "w") as f:
        json.dump(out, f, indent=1)


for p in sys.argv[1:]:
    summarize(p)
