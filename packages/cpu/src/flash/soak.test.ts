// 10,000 mixed calls on cpu-flash: flat memory, coded failures, no unhandled rejection.
import { describeSoak } from '@attn/conformance';
import { describe, it } from 'vitest';
import '../index.js';
import { addon } from './native.js';

const load = addon();
if (load.ok) {
  describeSoak({ backend: 'cpu-flash', device: 'cpu', dtype: 'float32' });
} else {
  console.log(`cpu-flash soak skipped: ${load.reason}`);
  describe.skip(`soak of 'cpu-flash' (skipped: ${load.reason})`, () => {
    it('needs the native addon', () => {});
  });
}
