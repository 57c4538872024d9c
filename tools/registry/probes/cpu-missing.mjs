// Run where @attn/cpu was installed without its optional prebuilt: cpu-flash must decline with a
// reason that names what was looked for and the npm commands that fix it (never a pnpm command),
// and selection must fall back to cpu-math.
import { explain, listBackends, randn } from '@attn/core';
import '@attn/cpu';

const q = randn([1, 2, 8, 16], { dtype: 'float32', seed: 1 });
const report = explain(q, q, q, {});
const a = listBackends('cpu')
  .find((e) => e.backend.name === 'cpu-flash')
  .backend.availability();
console.log(JSON.stringify({ selected: report.selected, availability: a }));
const reason = a.ok ? '' : a.reason;
const ok =
  !a.ok &&
  report.selected === 'cpu-math' &&
  reason.includes('@attn/cpu-linux-x64-gnu is not installed') &&
  reason.includes('`npm install @attn/cpu-linux-x64-gnu@') &&
  reason.includes('`npx @attn/native build @attn/cpu`') &&
  !/pnpm|^unavailable/.test(reason);
if (!ok) process.exit(1);
