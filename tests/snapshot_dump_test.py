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
  - truncated, corrupt and unknown-architecture snapshots: a clear error, exit 1, never a crash;
  - a crash inside the vDSO: the snapshot carries its image, whose CFI takes the walk out.

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

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from snapshot_checks import (chain_in_order, check, finish, functions, report_pcs, run_dump,
                             walk_pcs)

DUMP, FIXTURE = sys.argv[1], sys.argv[2]
LIB = os.path.join(os.path.dirname(FIXTURE), "libsnapshot_crash_lib.so")


def dump(*args):
    return run_dump(DUMP, *args)


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
    in_process = report_pcs(report)
    check(len(in_process) >= 5, f"the report has the chain's frames: {report}")
    check(re.search(r"^\*\*\* snapshot .*crash\.snapshot: \d+ bytes, \d+ of stack, \d+ modules, "
                    r"0 of 0 other threads captured \(0 bytes of their stacks\)$",
                    report, re.M) is not None, "the report says where the snapshot went")
    check(os.path.getsize(snap) > 0, "the snapshot was written")

    # 1. In place: the snapshot's walk equals the in-process report's.
    p = dump("--json", "--snapshot", snap)
    check(p.returncode == 0, f"--snapshot exits 0 (stderr: {p.stderr})")
    out = json.loads(p.stdout)
    check(out["complete"] and out["machine"] == "x86_64",
          "the snapshot is complete and names its architecture")
    check(out["signal"] == signal.SIGSEGV and out["fault_address"] == 0, "signal and address")
    check(walk_pcs(out) == in_process,
          f"snapshot walk == in-process report:\n  {list(map(hex, walk_pcs(out)))}\n"
          f"  {list(map(hex, in_process))}")
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
    check(walk_pcs(moved) == in_process, "--sysroot walk == in-process report")
    check(chain_in_order(functions(moved)), f"--sysroot names the chain: {functions(moved)}")
    p = dump("--json", "--snapshot", snap)
    gone = json.loads(p.stdout)
    check(len(walk_pcs(gone)) < len(in_process) and not chain_in_order(functions(gone)),
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
    check(p.returncode == 0 and walk_pcs(json.loads(p.stdout)) == in_process,
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
    # Another architecture's header over x86_64's 17 registers: its count is refused.
    other = bytearray(data)
    other[16:20] = (183).to_bytes(4, "little")  # EM_AARCH64
    try_bad(bytes(other), "the snapshot holds 17 registers, aarch64 has 33")
    other[16:20] = (243).to_bytes(4, "little")  # EM_RISCV
    try_bad(bytes(other), "a snapshot of ELF machine 243")
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

    # 6. A crash inside the vDSO (its getcpu storing through a bad pointer): the vDSO's tables
    # are in no file, so the snapshot carries its image, and its CFI takes the walk out of it.
    vdso_report, vdso_snap = os.path.join(work, "vdso.txt"), os.path.join(work, "vdso.snapshot")
    env["LD_LIBRARY_PATH"] = root + bin_dir + ":" + os.environ.get("LD_LIBRARY_PATH", "")
    p = subprocess.run([root + exe, vdso_report, vdso_snap, "vdso"], env=env, capture_output=True,
                       text=True, timeout=60)
    check(p.returncode == -signal.SIGSEGV, f"the vDSO fixture died of SIGSEGV ({p.returncode})")
    report = open(vdso_report).read()
    # glibc names it linux-vdso.so.1 (the module map "[vdso]" where it has no name).
    first = re.search(r"^#0 pc 0x[0-9a-f]+ .*\((\[vdso\]|linux-vdso\.so\.1)\+0x", report, re.M)
    if first is None:
        # A host whose vDSO has no getcpu (the libc makes the syscall, which returns EFAULT):
        # the fault is not in the vDSO, so there is nothing of it to check here.
        print("snapshot_dump_test: skipping the vDSO step: the report's #0 frame is not in the "
              f"vDSO (no vDSO getcpu on this host?):\n{report}")
        finish("snapshot_dump_test")  # exits 1 on an earlier step's failure
        sys.exit(0)
    p = dump("--json", "--snapshot", vdso_snap)  # it ran from its place under the root
    check(p.returncode == 0, f"vDSO snapshot: exit 0 ({p.stderr})")
    out = json.loads(p.stdout)
    vdso = [m for m in out["modules"] if first is not None and m["path"] == first.group(1)]
    check(len(vdso) == 1 and vdso[0]["error"] == "", f"the vDSO's tables were read: {vdso}")
    check(walk_pcs(out) == report_pcs(report),
          f"vDSO walk == in-process report:\n  {list(map(hex, walk_pcs(out)))}\n"
          f"  {list(map(hex, report_pcs(report)))}")
    trust = out["threads"][0]["frame_trust"]
    check(trust[1:2] == ["cfi"], f"out of the vDSO by its CFI: {trust}")
    names = functions(out)
    check("snapshot_vdso" in names and "main" in names[names.index("snapshot_vdso"):],
          f"the vDSO's callers named: {names}")
finally:
    shutil.rmtree(work, ignore_errors=True)

finish("snapshot_dump_test")
