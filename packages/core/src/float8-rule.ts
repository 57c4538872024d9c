// The rule selection adds for float8_e4m3 calls to every backend that does not declare float8Inputs. A
// backend's own dtype rules see params.dtype, which is the output's (bfloat16) for such calls, so without
// this rule a backend with no fp8 kernel would take fp8 bytes for bfloat16 ones. Core adds it, instead of
// every backend listing it, so that a backend written before fp8 inputs existed declines them by default.
import type { Backend, Rule } from './backend.js';
import { FLOAT_DTYPES } from './dtype.js';
import type { SdpaParams } from './params.js';
import { listBackends } from './registry.js';

const float8Rules = new WeakMap<Backend, Rule>();

/** What the backend's dtype rules (by name, e.g. 'dtypeIn(float16, bfloat16)') say it takes, else every float dtype. */
function dtypesTaken(backend: Backend): string {
  const named = backend.rules.filter((r) => r.name.startsWith('dtypeIn')).map((r) => r.name);
  return named.length > 0 ? named.join(' and ') : FLOAT_DTYPES.join(', ');
}

function float8Backends(p: SdpaParams): string {
  const names = listBackends(p.device.type)
    .filter((e) => e.backend.float8Inputs === true)
    .map((e) => e.name);
  return names.length > 0 ? names.join(', ') : `none is registered for ${p.device.type}`;
}

/** One object per backend (the call cache's path steps hold rules by identity, as kernelRule's). */
export function float8InputsRule(backend: Backend): Rule {
  let r = float8Rules.get(backend);
  if (!r) {
    r = {
      name: 'float8Inputs',
      check(p: SdpaParams) {
        if (p.descale === null) return null;
        return (
          `Takes query, key and value of dtype ${dtypesTaken(backend)}, not float8_e4m3: dequantize them ` +
          "(e.g. q.toDType('bfloat16') times descale.q, likewise k and v) and leave descale out, or choose a backend " +
          `that takes float8_e4m3 inputs (${float8Backends(p)}).`
        );
      },
    };
    float8Rules.set(backend, r);
  }
  return r;
}
