#!/usr/bin/env python3
"""stackwalk-dump --snapshot on a real crash's snapshot (issue 20).

snapshot_crash installs the crash handler with a snapshot (the C entry point) and dies of
SIGSEGV in main -> snapshot_a1 -> snapshot_a2 -> snapshot_lib_entry -> snapshot_lib_fault, built
-O2 without frame pointers (only CFI unwinds it), the innermost two in a shared library. The test
runs a copy of the fixture and its library from a scratch directory, then checks:
  - the handler's report and the snapshot's walk give the same PCs, frame for frame, and the
    walk names the chain in order (the snapshot was unwound from its stack bytes alone);
  - after the copies are moved under another root, --sysroot ROOT finds them (same frames),
    and without it the library's frames can no longer be unwound through or named;
  - --debug-dir finds the objects by build-id;
  - a file with another build-id at an object's path is refused, and said so;
  - truncated, corrupt and other-architecture snapshots: a clear error, exit 1, never a crash.

usage: snapshot_dump_test.py STACKWALK_DUMP SNAPSHOT_CRASH
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

DUMP, FIXTURE = sys.argv[1], sys.argv[2]
LIB = os.path.join(os.path.dirname(FIXTURE), "libsnapshot_crash_lib.so")
CHAIN = ["snapshot_lib_fault", "snapshot_lib_entry", "snapshot_a2", "snapshot_a1", "main"]
REPORT_FRAME = re.compile(r"^#(\d+) (pc|ra) 0x([0-9a-f]+) ")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def dump(*args):
    p = subprocess.run([DUMP, *args], capture_output=True, text=True, timeout=60)
    check(p.returncode >= 0, f"stackwalk-dump {args} died of signal {-p.returncode}")
    return p


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


work = tempfile.mkdtemp(prefix="snapshot_dump_test.")
try:
    # The fixture and its library copied where the test can move them away afterwards.
    bin_dir = os.path.join(work, "bin")
    os.makedirs(bin_dir)
    exe = os.path.join(bin_dir, "snapshot_crash")
    lib = os.path.join(bin_dir, "libsnapshot_crash_lib.so")
    shutil.copy2(FIXTURE, exe)
    shutil.copy2(LIB, lib)
    report_path = os.path.join(work, "report.txt")
    snap = os.path.join(work, "crash.snapshot")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = bin_dir + ":" + env.get("LD_LIBRARY_PATH", "")
    p = subprocess.run([exe, report_path, snap], env=env, capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == -signal.SIGSEGV, f"the fixture died of SIGSEGV (status {p.returncode})")
    report = open(report_path).read()
    report_pcs = [int(m.group(3), 16) for m in map(REPORT_FRAME.match, report.splitlines()) if m]
    check(len(report_pcs) >= len(CHAIN), f"the report has the chain's frames: {report}")
    check(re.search(r"^\*\*\* snapshot .*crash\.snapshot: \d+ bytes, \d+ of stack, \d+ modules$",
                    report, re.M) is not None, "the report says where the snapshot went")
    check(os.path.getsize(snap) > 0, "the snapshot was written")

    # 1. In place: the snapshot's walk equals the in-process report's.
    p = dump("--json", "--snapshot", snap)
    check(p.returncode == 0, f"--snapshot exits 0 (stderr: {p.stderr})")
    out = json.loads(p.stdout)
    check(out["complete"] and out["machine"] == "x86_64",
          "the snapshot is complete and names its architecture")
    check(out["signal"] == signal.SIGSEGV and out["fault_address"] == 0, "signal and address")
    check(walk_pcs(out) == report_pcs,
          f"snapshot walk == in-process report:\n  {list(map(hex, walk_pcs(out)))}\n"
          f"  {list(map(hex, report_pcs))}")
    check(chain_in_order(functions(out)), f"the chain named in order: {functions(out)}")
    check(out["threads"][0]["end"] == "end of stack", "the walk reaches the end of the stack")
    check(all(t == "cfi" for t in out["threads"][0]["frame_trust"][1:]),
          f"every frame found by CFI: {out['threads'][0]['frame_trust']}")
    text = dump("--snapshot", snap)
    check(text.returncode == 0 and "#4 0x" in text.stdout and "snapshot_a1" in text.stdout,
          f"text output: {text.stdout}")

    # 2. Elsewhere: the objects moved under another root.
    root = os.path.join(work, "root")
    for path in (exe, lib):
        dest = root + path
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.move(path, dest)
    for m in out["modules"]:
        src = m["path"]
        if src.startswith("/") and os.path.isfile(src) and not os.path.exists(root + src):
            os.makedirs(os.path.dirname(root + src), exist_ok=True)
            shutil.copy2(src, root + src)
    p = dump("--json", "--snapshot", snap, "--sysroot", root)
    check(p.returncode == 0, f"--sysroot exits 0 (stderr: {p.stderr})")
    moved = json.loads(p.stdout)
    check(walk_pcs(moved) == report_pcs, "--sysroot walk == in-process report")
    check(chain_in_order(functions(moved)), f"--sysroot names the chain: {functions(moved)}")
    p = dump("--json", "--snapshot", snap)
    gone = json.loads(p.stdout)
    check(len(walk_pcs(gone)) < len(report_pcs) and not chain_in_order(functions(gone)),
          "without --sysroot the moved objects are missing (the test proves --sysroot is used)")
    text = dump("--snapshot", snap)
    check("libsnapshot_crash_lib.so: cannot open" in text.stdout,
          f"the missing object is named: {text.stdout}")

    # 3. By build-id.
    debug = os.path.join(work, "debug")
    for m in out["modules"]:
        if m["build_id"] and os.path.exists(root + m["path"]):
            d = os.path.join(debug, ".build-id", m["build_id"][:2])
            os.makedirs(d, exist_ok=True)
            shutil.copy2(root + m["path"], os.path.join(d, m["build_id"][2:] + ".debug"))
    p = dump("--json", "--snapshot", snap, "--debug-dir", debug)
    check(p.returncode == 0 and walk_pcs(json.loads(p.stdout)) == report_pcs,
          f"--debug-dir walk == in-process report ({p.stderr})")

    # 4. Another file at the library's path: refused by build-id.
    wrong = os.path.join(work, "wrong")
    os.makedirs(os.path.dirname(wrong + lib), exist_ok=True)
    shutil.copytree(root, wrong, dirs_exist_ok=True)
    shutil.copy2(root + exe, wrong + lib)
    p = dump("--snapshot", snap, "--sysroot", wrong)
    check("has build-id" in p.stdout and "the snapshot's is" in p.stdout,
          f"a build-id mismatch is said: {p.stdout}")

    # 5. Bad snapshots: clear errors, exit 1, the best partial answer.
    data = open(snap, "rb").read()
    bad = os.path.join(work, "bad.snapshot")

    def try_bad(blob, expect):
        with open(bad, "wb") as f:
            f.write(blob)
        p = dump("--snapshot", bad, "--sysroot", root)
        check(p.returncode == 1, f"{expect}: exit 1 (got {p.returncode})")
        check(expect in p.stderr, f"{expect!r} in stderr: {p.stderr}")
        return p

    try_bad(data[:10], "truncated")
    try_bad(b"ELF" + data[3:], "not a stackwalk crash snapshot")
    # Half the stack's bytes gone (the end section's 16 bytes and the outer half).
    check(out["stack_bytes"] >= 512, f"the snapshot holds stack bytes: {out['stack_bytes']}")
    p = try_bad(data[:len(data) - 16 - out["stack_bytes"] // 2], "truncated")
    check("snapshot_lib_fault" in p.stdout,
          f"a snapshot cut in its stack still gives the innermost frames: {p.stdout}")
    other = bytearray(data)
    other[16:20] = (183).to_bytes(4, "little")  # EM_AARCH64
    try_bad(bytes(other), "a snapshot of an aarch64 process")
    version = bytearray(data)
    version[8:12] = (99).to_bytes(4, "little")
    try_bad(bytes(version), "format version 99")
    p = dump("--snapshot", os.path.join(work, "absent"))
    check(p.returncode == 1 and "cannot open" in p.stderr, "a missing file: cannot open")
    p = dump("--snapshot", "/dev/zero")
    check(p.returncode == 1 and "larger than any snapshot" in p.stderr, f"/dev/zero: {p.stderr}")
    # A FIFO where an object should be: not opened for ever, said.
    fifo_root = os.path.join(work, "fifo")
    os.makedirs(os.path.dirname(fifo_root + lib))
    os.mkfifo(fifo_root + lib)
    p = dump("--snapshot", snap, "--sysroot", fifo_root)
    check("not a regular file" in p.stdout, f"a FIFO at an object's path: {p.stdout}")
    p = dump("--snapshot", snap, "1234")
    check(p.returncode == 2, "a PID and --snapshot: usage error")
finally:
    shutil.rmtree(work, ignore_errors=True)

if failures:
    print(f"{len(failures)} checks failed")
    sys.exit(1)
print("snapshot_dump_test: all checks passed")
