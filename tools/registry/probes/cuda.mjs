// Run in a fresh folder where npm installed @attn/core and @attn/flash-cuda (and, with argv[2] =
// 'memeff', @attn/cutlass-memeff). Every CUDA backend must have loaded its prebuilt addon: on a GPU
// host it is available; without one its reason is the device, never a missing addon.
import { listBackends } from '@attn/core';
import '@attn/cuda';
import '@attn/flash-cuda';

const names = ['flash-cuda'];
if (process.argv[2] === 'memeff') {
  await import('@attn/cutlass-memeff');
  names.push('memeff-cuda');
}
const rows = names.map((name) => {
  const b = listBackends('cuda').find((e) => e.backend.name === name)?.backend;
  return { name, registered: !!b, availability: b?.availability() ?? null };
});
console.log(JSON.stringify(rows));
const bad = rows.filter(
  (r) =>
    !r.registered ||
    (!r.availability.ok && /no native addon|failed to load|another version/.test(r.availability.reason)),
);
if (bad.length > 0) process.exit(1);
