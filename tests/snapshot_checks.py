"""What the snapshot tests share: snapshot_crash's chain, the PCs of its in-process report, and
the frames of stackwalk-dump --json (snapshot_dump_test.py, snapshot_crossarch_test.py)."""
import re
import subprocess
import sys

# main -> snapshot_a1 -> snapshot_a2 -> snapshot_lib_entry -> snapshot_lib_fault, innermost first.
CHAIN = ["snapshot_lib_fault", "snapshot_lib_entry", "snapshot_a2", "snapshot_a1", "main"]
REPORT_FRAME = re.compile(r"^#(\d+) (pc|ra) 0x([0-9a-f]+) ")


def report_pcs(report):
    """The PCs of the crash handler's report, frame by frame."""
    return [int(m.group(3), 16) for m in map(REPORT_FRAME.match, report.splitlines()) if m]


def walk_pcs(out):
    """The trace's PCs (one per index; inline frames share their index's)."""
    seen, pcs = set(), []
    for f in out["threads"][0]["frames"]:
        if f["index"] not in seen:
            seen.add(f["index"])
            pcs.append(int(f["pc"], 16))
    return pcs


def functions(out):
    return [f.get("function", "") for f in out["threads"][0]["frames"]]


def chain_in_order(names):
    at = 0
    for n in names:
        if at < len(CHAIN) and n == CHAIN[at]:
            at += 1
    return at == len(CHAIN)


failures = []


def check(ok, what):
    """Records a failed check (the script goes on, to report every one)."""
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run_dump(tool, *args):
    """stackwalk-dump with `args`; dying of a signal is a failure."""
    p = subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)
    check(p.returncode >= 0, f"stackwalk-dump {args} died of signal {-p.returncode}")
    return p


def finish(name):
    if failures:
        print(f"{len(failures)} checks failed")
        sys.exit(1)
    print(f"{name}: all checks passed")
