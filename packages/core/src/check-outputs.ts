// What a backend returns is checked before the user sees it: a wrong shape or dtype is a backend
// bug, reported with the backend's name instead of surfacing later as wrong numbers.
import type { ForwardOutputs, Gradients } from './backend.js';
import { deviceToString, sameDevice } from './device-parse.js';
import { AttnError } from './errors.js';
import type { SdpaParams } from './params.js';
import { Tensor } from './tensor.js';

// A loop, not every() with a closure: this runs twice per call on the call path.
function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function badOutput(
  backend: string,
  what: string,
  shape: readonly number[],
  dtype: string,
  p: SdpaParams,
  got: string,
): never {
  throw new AttnError(
    'ATTN_BACKEND_OUTPUT',
    `Backend '${backend}' returned a bad ${what}: expected ${dtype} [${shape.join(', ')}] on ${deviceToString(p.device)}, got ${got}. ` +
      'This is a bug in that backend; choose another with the backends option meanwhile.',
  );
}

function expectTensor(
  backend: string,
  what: string,
  t: unknown,
  shape: readonly number[],
  dtype: string,
  p: SdpaParams,
): void {
  if (!Tensor.isTensor(t)) return badOutput(backend, what, shape, dtype, p, t === undefined ? 'nothing' : typeof t);
  if (t.disposed) return badOutput(backend, what, shape, dtype, p, 'a disposed tensor');
  if (!sameShape(t.shape, shape) || t.dtype !== dtype || !sameDevice(t.device, p.device)) {
    badOutput(backend, what, shape, dtype, p, `${t.dtype} [${t.shape.join(', ')}] on ${deviceToString(t.device)}`);
  }
}

/** out [B, Hq, Sq, Dv] (varlen [totalQ, Hq, Dv]) in params.dtype; logsumexp float32 [B, Hq, Sq] (varlen [Hq, totalQ]). */
export function checkForwardOutputs(backend: string, p: SdpaParams, o: ForwardOutputs): void {
  if (typeof o !== 'object' || o === null) {
    throw new AttnError(
      'ATTN_BACKEND_OUTPUT',
      `Backend '${backend}' forward returned ${String(o)} instead of { out, logsumexp }.`,
    );
  }
  checkForwardOut(backend, p, o.out);
  if (p.varlen) {
    expectTensor(backend, 'logsumexp', o.logsumexp, [p.headsQ, p.query.shape[0]!], 'float32', p);
  } else {
    expectTensor(backend, 'logsumexp', o.logsumexp, [p.batch, p.headsQ, p.seqQ], 'float32', p);
  }
}

/** out [B, Hq, Sq, Dv] (varlen [totalQ, Hq, Dv]) in params.dtype, and the call's out where it gave one. */
export function checkForwardOut(backend: string, p: SdpaParams, out: Tensor): void {
  if (p.out && out !== p.out) {
    throw new AttnError(
      'ATTN_BACKEND_OUTPUT',
      `Backend '${backend}' did not write into the call's out tensor (it returned another). This is a bug in that backend: it must write into params.out (forwardOutput), or decline calls with out by a rule.`,
    );
  }
  if (p.varlen) {
    expectTensor(backend, 'out', out, [p.query.shape[0]!, p.headsQ, p.headDimV], p.dtype, p);
  } else {
    expectTensor(backend, 'out', out, [p.batch, p.headsQ, p.seqQ, p.headDimV], p.dtype, p);
  }
}

/** dq, dk, dv shaped like q, k, v in their dtype; dbias like the additive mask, required with one and only then. */
export function checkGradients(backend: string, p: SdpaParams, g: Gradients): void {
  if (typeof g !== 'object' || g === null) {
    throw new AttnError(
      'ATTN_BACKEND_OUTPUT',
      `Backend '${backend}' backward returned ${String(g)} instead of { dq, dk, dv }.`,
    );
  }
  expectTensor(backend, 'dq', g.dq, p.query.shape, p.dtype, p);
  expectTensor(backend, 'dk', g.dk, p.key.shape, p.dtype, p);
  expectTensor(backend, 'dv', g.dv, p.value.shape, p.dtype, p);
  if (p.mask?.kind === 'additive') {
    expectTensor(backend, 'dbias', g.dbias, p.mask.tensor.shape, p.mask.tensor.dtype, p);
  } else if (g.dbias !== undefined) {
    throw new AttnError(
      'ATTN_BACKEND_OUTPUT',
      `Backend '${backend}' returned dbias although the call has no additive mask.`,
    );
  }
}
