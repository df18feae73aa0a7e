#!/usr/bin/env python3
"""Runs a command as in a container whose kernel offers neither Landlock nor namespaces.

    scripts/without-landlock.py cargo test --workspace

A seccomp filter (inherited by everything the command starts) fails the landlock_* system
calls with ENOSYS, as Docker's default profile and kernels built without Landlock do, and
unshare(2) with EPERM, as containers without CAP_SYS_ADMIN and Ubuntu's AppArmor default for
unprivileged users do. The test suite must pass there too: each sandbox test then checks the
degraded behaviour (what still holds, what `coding-agent doctor` says is missing) instead of
the full one. .ci/run runs the ordinary user's test suite through it.

Linux on x86-64 or arm64 only; elsewhere the command runs as it is.
"""
import ctypes
import os
import platform
import struct
import sys

# seccomp_data.arch values, and the numbers of unshare(2) (landlock_* are 444-446 on both).
ARCHES = {
    "x86_64": (0xC000003E, 272),
    "aarch64": (0xC00000B7, 97),
}
ENOSYS, EPERM = 38, 1
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
LD_ABS_W, JEQ_K, RET_K = 0x20, 0x15, 0x06
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000


def insn(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)


def install(arch, unshare):
    program = [
        insn(LD_ABS_W, 0, 0, 4),  # 0: the architecture
        insn(JEQ_K, 1, 0, arch),  # 1: ours -> 3
        insn(RET_K, 0, 0, RET_ALLOW),  # 2: another (no 32-bit calls are refused)
        insn(LD_ABS_W, 0, 0, 0),  # 3: the system call number
        insn(JEQ_K, 4, 0, 444),  # 4: landlock_create_ruleset -> 9
        insn(JEQ_K, 3, 0, 445),  # 5: landlock_add_rule -> 9
        insn(JEQ_K, 2, 0, 446),  # 6: landlock_restrict_self -> 9
        insn(JEQ_K, 2, 0, unshare),  # 7: unshare -> 10
        insn(RET_K, 0, 0, RET_ALLOW),  # 8
        insn(RET_K, 0, 0, RET_ERRNO | ENOSYS),  # 9
        insn(RET_K, 0, 0, RET_ERRNO | EPERM),  # 10
    ]
    code = ctypes.create_string_buffer(b"".join(program))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program), ctypes.addressof(code))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        sys.exit("without-landlock: prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        sys.exit(f"without-landlock: seccomp failed: {os.strerror(ctypes.get_errno())}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    machine = platform.machine()
    if sys.platform == "linux" and machine in ARCHES:
        install(*ARCHES[machine])
    else:
        print(f"without-landlock: {sys.platform}/{machine}: running as it is", file=sys.stderr)
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
