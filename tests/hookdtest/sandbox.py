"""Runs a command under the seccomp filters that packaging/hookd.service asks
systemd for, built the way systemd builds them, with libseccomp (through
ctypes: Debian's libseccomp2 is installed, its Python binding is not):

- SystemCallFilter=@system-service with SystemCallErrorNumber=EPERM: every
  system call not in the list (one name per line in ALLOW_FILE, from
  `systemd-analyze syscall-filter`) fails with EPERM;
- RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX: socket() of any other
  family fails with EAFNOSUPPORT;
- MemoryDenyWriteExecute=yes: mmap() of a mapping both writable and
  executable, and mprotect()/pkey_mprotect() adding PROT_EXEC, fail with
  EPERM;
- SystemCallArchitectures=native: libseccomp's default (other
  architectures' calls kill the process).

The filters are loaded, then the command is exec'd: the dynamic loader and
everything after run under them, as in a unit.

    python3 sandbox.py ALLOW_FILE -- COMMAND [ARG...]
"""
from __future__ import annotations

import ctypes
import os
import sys

ACT_ALLOW = 0x7FFF0000
EPERM, EAFNOSUPPORT = 1, 97
AF_UNIX, AF_INET, AF_INET6, AF_MAX = 1, 2, 10, 46
PROT_WRITE, PROT_EXEC = 2, 4
CMP_EQ, CMP_MASKED_EQ = 4, 7


def act_errno(e: int) -> int:
    return 0x00050000 | (e & 0xFFFF)


class ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


def main(argv: list[str]) -> None:
    allow_file, sep, cmd = argv[0], argv[1], argv[2:]
    assert sep == "--" and cmd, __doc__
    lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]

    ctx = lib.seccomp_init(act_errno(EPERM))
    if not ctx:
        sys.exit("sandbox: seccomp_init failed")

    def rule(action: int, name: str, *cmps: tuple[int, int, int, int]) -> None:
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            return  # not a system call on this architecture
        arr = (ArgCmp * len(cmps))(*[ArgCmp(*c) for c in cmps]) if cmps else None
        rc = lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), arr)
        if rc != 0:
            sys.exit(f"sandbox: rule for {name}: {os.strerror(-rc)}")

    wx = PROT_WRITE | PROT_EXEC
    # allowed below only with the arguments the unit permits (libseccomp
    # lets an unconditional rule override conditional ones of the call)
    guarded = {"mmap", "mprotect", "pkey_mprotect", "socket"}
    for name in open(allow_file).read().split():
        if name not in guarded:
            rule(ACT_ALLOW, name)
    for prot in (0, PROT_WRITE, PROT_EXEC):  # mmap: anything but writable and executable at once
        rule(ACT_ALLOW, "mmap", (2, CMP_MASKED_EQ, wx, prot))
    for name in ("mprotect", "pkey_mprotect"):  # never adds PROT_EXEC
        rule(ACT_ALLOW, name, (2, CMP_MASKED_EQ, PROT_EXEC, 0))
    for family in range(AF_MAX):
        allowed = family in (AF_UNIX, AF_INET, AF_INET6)
        rule(ACT_ALLOW if allowed else act_errno(EAFNOSUPPORT), "socket", (0, CMP_EQ, family, 0))
    rc = lib.seccomp_load(ctx)
    if rc != 0:
        sys.exit(f"sandbox: seccomp_load: {os.strerror(-rc)}")
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
