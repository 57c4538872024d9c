// Calls split into dense problems of their own: varlen (packed variable-length batches) one sequence
// at a time, with views moved to its first token, its lengths, its causal/window alignment, its ALiBi
// slopes and its index in the Philox counter; and sequsedK (keys used per batch row), whose rows run
// with Sk = their used count. Compiled once (baseline): no kernel code here.
#pragma once
#include "kernels/isa.h"
#include "problem.h"

namespace attn_cpu {

// Runs p through ks: a dense call without sequsedK directly (no extra work), else split.
void run_forward(const KernelSet& ks, const FwdProblem& p);
void run_backward(const KernelSet& ks, const BwdProblem& p);

}  // namespace attn_cpu
