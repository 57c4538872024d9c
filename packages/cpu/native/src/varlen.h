// Varlen (packed variable-length batches): each sequence runs as a dense problem of its own, with
// views moved to its first token, its lengths, its causal/window alignment, its ALiBi slopes and
// its index in the Philox counter. Compiled once (baseline): no kernel code here.
#pragma once
#include "kernels/isa.h"
#include "problem.h"

namespace attn_cpu {

// Runs p through ks: dense directly, varlen one sequence at a time.
void run_forward(const KernelSet& ks, const FwdProblem& p);
void run_backward(const KernelSet& ks, const BwdProblem& p);

}  // namespace attn_cpu
