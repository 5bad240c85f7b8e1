"""The assembly check on sample text, and the branch kernels on tiny inputs (no timed asserts)."""

from __future__ import annotations

import numpy as np

from perfprobe.kernels import branch_kernels, compiled

BRANCHY = """
_ZN4main7branchyE:
\tpushq\t%rbp
\ttestq\t%r8, %r8
\tjle\t.LBB0_5
\txorl\t%eax, %eax
\tjmp\t.LBB0_2
.LBB0_4:
\tincq\t%rax
\tcmpq\t%rax, %r14
\tje\t.LBB0_5
.LBB0_2:
\tmovslq\t(%rbp,%rax,4), %rcx
\tcmpq\t%rcx, %r13
\tjg\t.LBB0_4
\t#APP
\t#NO_APP
\taddq\t%rcx, %r15
\tjmp\t.LBB0_4
.LBB0_5:
\tretq
"""

CMOV = """
_ZN4main11branch_freeE:
\ttestq\t%r14, %r14
\tjle\t.LBB0_6
.LBB0_5:
\tmovslq\t(%rbp,%rax,4), %rcx
\tmovl\t$0, %edx
\tincq\t%rax
\tcmpq\t%rcx, %r13
\tcmovleq\t%rcx, %rdx
\taddq\t%rdx, %r15
\tcmpq\t%rax, %r14
\tjne\t.LBB0_5
.LBB0_6:
\tretq
"""

VECTOR = """
.LBB1_3:
\tvpaddq\t(%rdi,%rax,8), %zmm0, %zmm0
\taddq\t$8, %rax
\tcmpq\t%rax, %rsi
\tjne\t.LBB1_3
\tvmovq\t%xmm0, %rax
\tretq
"""


def test_a_branch_inside_the_loop_is_found():
    assert compiled.loop_branches(BRANCHY) == ["jg\t.LBB0_4"]


def test_a_cmov_loop_has_no_branch_and_its_exit_test_is_not_one():
    assert compiled.loop_branches(CMOV) == []
    assert len(compiled.innermost_loops(CMOV)) == 1


def test_loop_shape_lists_the_inner_loop_mnemonics_without_labels():
    assert branch_kernels.loop_shape(CMOV) == ["movslq", "movl", "incq", "cmpq", "cmovleq", "addq", "cmpq", "jne"]
    assert branch_kernels.loop_shape("\tretq\n") == []


def test_vector_width_comes_from_the_innermost_loop_only():
    assert compiled.loop_vector_bytes(VECTOR) == 64
    assert compiled.loop_vector_bytes(CMOV) == 0


def test_nested_loops_count_only_the_inner_one():
    nested = BRANCHY.replace(".LBB0_5:\n\tretq", "\tdecq\t%r12\n\tjne\t.LBB0_4\n.LBB0_5:\n\tretq")
    assert compiled.loop_branches(nested) == ["jg\t.LBB0_4"]


def test_compiled_branchy_kernel_keeps_its_branch():
    check = branch_kernels.branch_check()
    assert check["branch_in_code"] is True
    assert check["branch_free_has_branch"] is False
    assert check["branch_free_cmov"] is True  # the form bench/branch_ref.c pins in inline asm
    assert check["branchy_loop"] and check["branch_free_loop"]


def test_kernels_compute_the_same_sum():
    data = np.arange(256, dtype=np.int32)
    expected = int(data[data >= 128].sum()) * 3  # one untimed pass and two timed ones
    assert branch_kernels.branchy(data, 128, 2)[1] == expected
    assert branch_kernels.branch_free(data, 128, 2)[1] == expected


def test_add_chain_adds_chain_times_step_per_iteration():
    _, total = branch_kernels.add_chain(10, 3)
    assert total == 11 * branch_kernels.CHAIN * 3
