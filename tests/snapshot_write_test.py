#!/usr/bin/env python3
"""The crash snapshot as written, on every architecture (issue 20): snapshot_crash dies of
SIGSEGV (under qemu-user for aarch64 and arm32) and its snapshot is parsed here, independently of
the C++ reader, against docs/snapshot-format.md: the header names the process's architecture, the
sections are whole and end with the end section, the registers' PC is the report's frame #0 and
their SP the stack's first address, and the fixture and its library are listed with the build-ids
and load biases the report gives, the vDSO followed by its image. (Unwinding it:
snapshot_dump_test.py, and snapshot_crossarch_test.py for aarch64 and arm32.)

usage: snapshot_write_test.py SNAPSHOT_CRASH [EMULATOR ARGS...]
"""
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile

FIXTURE, EMULATOR = sys.argv[1], [a for a in sys.argv[2:] if a]
# e_machine: (name, register count, PC register, SP register, word size)
ARCHES = {62: ("x86_64", 17, 16, 7, 8), 183: ("aarch64", 33, 32, 31, 8), 40: ("arm", 16, 15, 13, 4)}
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


work = tempfile.mkdtemp(prefix="snapshot_write_test.")
try:
    report_path, snap_path = os.path.join(work, "report.txt"), os.path.join(work, "crash.snapshot")
    p = subprocess.run(EMULATOR + [FIXTURE, report_path, snap_path], capture_output=True,
                       text=True, timeout=120)
    check(p.returncode in (-signal.SIGSEGV, 128 + signal.SIGSEGV),
          f"the fixture died of SIGSEGV (status {p.returncode}, {p.stderr})")
    report = open(report_path).read()
    frames = re.findall(r"^#(\d+) (?:pc|ra) 0x([0-9a-f]+) ", report, re.M)
    modules = {m[0]: (m[1], int(m[2], 16)) for m in
               re.findall(r"^\*\*\* module (\S+) build-id (\S+) bias 0x([0-9a-f]+)$", report, re.M)}
    check(len(frames) >= 5, f"the report has the chain: {report}")
    data = open(snap_path, "rb").read()
    check(data[:8] == b"SWSNAP\r\n", "magic")
    version, order, machine, word = struct.unpack_from("<IIII", data, 8)
    check(version == 1 and order == 0x01020304, f"version {version}, byte order {order:#x}")
    check(machine in ARCHES, f"machine {machine}")
    name, nregs, pc_reg, sp_reg, word_size = ARCHES.get(machine, ("?", 0, 0, 0, 0))
    check(word == word_size, f"{name}: word size {word}")
    at, sections, ended = 24, [], False
    regs, mask, stack_at, stack_size, listed = None, 0, None, 0, {}
    last_module, vdso_modules, images = None, 0, 0
    threads = []  # (tid, state, name) of the other threads (qemu-user has threads of its own)
    while at + 16 <= len(data):
        kind, reserved, size = struct.unpack_from("<IIQ", data, at)
        payload = data[at + 16:at + 16 + size]
        check(len(payload) == size and reserved == 0, f"section {kind} at {at} whole")
        at += 16 + size
        sections.append(kind)
        if kind == 0:
            ended = True
            break
        if kind == 2:
            _, count, mask = struct.unpack_from("<iIQ", payload)
            regs = struct.unpack_from(f"<{count}Q", payload, 16)
        elif kind == 3:
            (stack_at,) = struct.unpack_from("<Q", payload)
            stack_size = size - 8
        elif kind == 4:
            bias, lo, hi, nexec, nid, npath, flags = struct.unpack_from("<QQQIIII", payload)
            build_id = payload[40 + 16 * nexec:40 + 16 * nexec + nid].hex()
            path = payload[40 + 16 * nexec + nid:].decode()
            listed[path] = (build_id or "none", bias, nexec)
            last_module = (lo, hi, flags)
            if flags & 2:
                vdso_modules += 1
        elif kind == 6:
            tid, state, detail = struct.unpack_from("<iIi", payload)
            threads.append((tid, state, payload[16:32].rstrip(b"\0").decode(errors="replace")))
        elif kind in (7, 8):
            (tid,) = struct.unpack_from("<i", payload)
            check(threads and threads[-1][0] == tid and threads[-1][1] == 0 and
                  sections[-2] == (6 if kind == 7 else 7),
                  f"thread section {kind} of {tid} follows its captured thread: {threads[-1:]}")
            if kind == 7:
                check(struct.unpack_from("<iI", payload)[1] == nregs, f"thread {tid}: {nregs} registers")
        elif kind == 5:
            # The vDSO's image, right after its module: its extent's bytes from its start.
            (image_at,) = struct.unpack_from("<Q", payload)
            check(sections[-2:] == [4, 5] and last_module is not None and last_module[2] & 2 and
                  image_at == last_module[0] and 0 < size - 8 <= last_module[1] - last_module[0],
                  f"an image follows the vDSO's module, at its start: {image_at:#x} {last_module}")
            check(payload[8:12] == b"\x7fELF", "the vDSO's image is its ELF image")
            images += 1
    check(ended and at == len(data), f"ends with the end section at the file's end ({at}/{len(data)})")
    stack = sections.index(3) if 3 in sections else len(sections)
    check(sections[:3] == [1, 2, 4] and set(sections[2:stack]) == {4, 5} - ({5} if not images else set())
          and set(sections[stack + 1:-1]) <= {6, 7, 8} and sections[-1:] == [0],
          f"process, registers, modules, stack, other threads, end: {sections}")
    check(images == vdso_modules, f"the vDSO's image with its module ({images} of {vdso_modules})")
    check(regs is not None and len(regs) == nregs, f"{name}: {nregs} registers")
    if regs is not None and len(regs) == nregs and frames:
        pc = regs[pc_reg] & ~1 if machine == 40 else regs[pc_reg]  # Thumb bit
        check(pc == int(frames[0][1], 16), f"PC {pc:#x} is the report's #0 {frames[0][1]}")
        check(regs[sp_reg] == stack_at, f"SP {regs[sp_reg]:#x} is the stack's address")
        check((mask >> pc_reg) & 1 and (mask >> sp_reg) & 1, "PC and SP are valid")
    check(stack_size > 256, f"stack bytes: {stack_size}")
    for suffix in ("/snapshot_crash", "/libsnapshot_crash_lib.so"):
        found = [p for p in listed if p.endswith(suffix)]
        check(len(found) == 1, f"{suffix} listed: {sorted(listed)}")
        if found and found[0] in modules:
            build_id, bias = modules[found[0]]
            check(listed[found[0]][:2] == (build_id, bias),
                  f"{found[0]}: {listed[found[0]][:2]} == the report's {(build_id, bias)}")
            check(listed[found[0]][2] >= 1, f"{found[0]}: an executable range")
    print(f"{name}: {len(data)} bytes, {stack_size} of stack, {len(listed)} objects")
finally:
    shutil.rmtree(work, ignore_errors=True)

if failures:
    print(f"{len(failures)} checks failed")
    sys.exit(1)
print("snapshot_write_test: all checks passed")
