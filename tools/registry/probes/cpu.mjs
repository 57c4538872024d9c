// Run in a fresh folder where npm installed @attn/core and @attn/cpu. A float32 call must select
// cpu-flash, run on the addon origin named in argv[2] ('prebuilt' or 'local build'), and agree with
// cpu-math (the float64 reference). Prints one JSON line; exits 1 on any mismatch.
import { explain, formatReport, listBackends, randn, sdpa } from '@attn/core';
import '@attn/cpu';

const expectedOrigin = process.argv[2];
const q = randn([1, 4, 33, 64], { dtype: 'float32', seed: 1 });
const k = randn([1, 4, 47, 64], { dtype: 'float32', seed: 2 });
const v = randn([1, 4, 47, 64], { dtype: 'float32', seed: 3 });
const report = explain(q, k, v, { isCausal: true });
const flash = listBackends('cpu').find((e) => e.backend.name === 'cpu-flash')?.backend;
const info = flash?.buildInfo?.() ?? {};
const out = sdpa(q, k, v, { isCausal: true }).toFloat32Array();
const ref = sdpa(q, k, v, { isCausal: true, backends: ['cpu-math'] }).toFloat32Array();
let maxErr = 0;
for (let i = 0; i < out.length; i++) maxErr = Math.max(maxErr, Math.abs(out[i] - ref[i]));
const result = { selected: report.selected, origin: info.addonOrigin ?? null, addon: info.addon ?? null, maxErr };
console.log(JSON.stringify(result));
const ok = report.selected === 'cpu-flash' && info.addonOrigin === expectedOrigin && maxErr < 1e-5;
if (!ok) {
  console.error(formatReport(report));
  process.exit(1);
}
