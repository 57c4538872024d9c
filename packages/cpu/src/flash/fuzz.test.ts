// The fuzz suite on cpu-flash: random calls (poisoned values, zero sizes, strides, every feature)
// against cpu-math, each in a child process; see @attn/conformance's describeFuzz.
import { fileURLToPath } from 'node:url';
import { describeFuzz } from '@attn/conformance';

describeFuzz('cpu-flash', { modules: [fileURLToPath(new URL('../index.ts', import.meta.url))], device: 'cpu' });
