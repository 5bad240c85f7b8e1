"""Test hook for the negative shape only: run a command with set_mempolicy(2) turned into a silent
no-op, so a `--bind` sets the CPUs but not the memory — the failure the binding checks must catch.

Usage: python break_membind.py COMMAND [ARGS...]. A seccomp filter (inherited across exec, this
process and its children only) answers set_mempolicy with "success" without doing anything; every
other system call runs as usual. Nothing in perfprobe knows about this hook.
"""

from __future__ import annotations

import ctypes
import os
import sys

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
AUDIT_ARCH_X86_64 = 0xC000003E
SYS_SET_MEMPOLICY = 238
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000  # ERRNO with 0: "returns 0"
BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


def install_filter() -> None:
    """seccomp: on x86-64, set_mempolicy returns 0 and does nothing; all else is allowed."""
    program = [
        SockFilter(BPF_LD_W_ABS, 0, 0, 4),                   # A = seccomp_data.arch
        SockFilter(BPF_JEQ_K, 0, 3, AUDIT_ARCH_X86_64),      # other arch: allow
        SockFilter(BPF_LD_W_ABS, 0, 0, 0),                   # A = seccomp_data.nr
        SockFilter(BPF_JEQ_K, 0, 1, SYS_SET_MEMPOLICY),
        SockFilter(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | 0),  # set_mempolicy: "success", no effect
        SockFilter(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
    filters = (SockFilter * len(program))(*program)
    prog = SockFprog(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


if __name__ == "__main__":
    install_filter()
    print("break_membind: set_mempolicy is now a no-op for this command", file=sys.stderr)
    os.execvp(sys.argv[1], sys.argv[1:])
