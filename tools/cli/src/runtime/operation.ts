// One timed operation (forward, backward, or both) on a problem's input sets, for one backend.
import { sdpaBackward, type ForwardResult, type Gradients, type Tensor } from '@attn/core';
import type { Mode } from '../flops.js';
import type { ProblemSpec } from '../problem.js';
import { forwardCall, outputCall, type ProblemInputs } from './inputs.js';
import { randomTensor } from './random.js';

export interface Operation {
  /** Runs once on input set `set`; the returned cleanup disposes the outputs (outside the timing). */
  call(set: number): () => void;
  /** Frees what the operation keeps (saved forwards, gradients of the output). */
  dispose(): void;
}

/** What a user's loop disposes after a call: its outputs, but not a preallocated out it reuses. */
function disposeForward(r: ForwardResult, kept: Tensor | null = null): void {
  if (r.out !== kept) r.out.dispose();
  r.logsumexp.dispose();
}

function disposeGradients(g: Gradients): void {
  g.dq.dispose();
  g.dk.dispose();
  g.dv.dispose();
  g.dbias?.dispose();
}

/** The random gradient of the output for set `set` ([B, Hq, Sq, Dv]). */
export function gradOutFor(p: ProblemSpec, set: number): Tensor {
  return randomTensor([p.batch, p.headsQ, p.seqQ, p.headDimV], p.dtype, p.device, (p.seed * 1009 + set * 16 + 5) >>> 0);
}

/** Backward modes need requiresGrad in the options so that selection picks a backend with a backward. */
export function problemForMode(p: ProblemSpec, mode: Mode): ProblemSpec {
  return mode === 'fwd' ? p : { ...p, requiresGrad: true };
}

export function makeOperation(
  p: ProblemSpec,
  mode: Mode,
  sets: readonly ProblemInputs[],
  backends: readonly string[] | null,
): Operation {
  const problem = problemForMode(p, mode);
  if (mode === 'fwd') {
    // The output alone (sdpa()), as torch's SDPA returns it: what an inference loop calls.
    const outputs = sets.map((s) => outputCall(problem, s, backends));
    return {
      call(i) {
        const out = outputs[i]!();
        return () => {
          if (out !== sets[i]!.out) out.dispose(); // a preallocated out stays, as a user's loop reuses it
        };
      },
      dispose() {},
    };
  }
  const calls = sets.map((s) => forwardCall(problem, s, backends));
  const forward = (i: number) => calls[i]!();
  const grads = sets.map((_, i) => gradOutFor(problem, i));
  if (mode === 'fwdbwd') {
    return {
      call(i) {
        const r = forward(i);
        const g = sdpaBackward(grads[i]!, r);
        return () => {
          disposeGradients(g);
          disposeForward(r);
        };
      },
      dispose: () => grads.forEach((g) => g.dispose()),
    };
  }
  const saved = sets.map((_, i) => forward(i));
  return {
    call(i) {
      const g = sdpaBackward(grads[i]!, saved[i]!);
      return () => disposeGradients(g);
    },
    dispose() {
      grads.forEach((g) => g.dispose());
      saved.forEach((r) => disposeForward(r));
    },
  };
}
