const { normalizeVarlenParams, randn, tensor } = await import('@attn/core');
const { createCpuFlashBackend } = await import('/work/wt-paged-cpu/packages/cpu/dist/index.js');
function gcd(a, b) { return b === 0 ? a : gcd(b, a % b); }
function pagedLayout(lengths, bs) {
  const need = lengths.map((n) => Math.ceil(n / bs));
  const numBlocks = need.reduce((a, c) => a + c, 0);
  let m = 7919 % numBlocks || 1;
  while (gcd(m, numBlocks) !== 1) m++;
  const maxBlocksPerSeq = Math.max(...need);
  const table = new Int32Array(lengths.length * maxBlocksPerSeq);
  let t = 0;
  need.forEach((n, b) => { for (let i = 0; i < n; i++) table[b * maxBlocksPerSeq + i] = (t++ * m) % numBlocks; });
  return { numBlocks, maxBlocksPerSeq, table, bs };
}
function toPool(packed, lengths, H, C, lay) {
  const pool = new Float64Array(lay.numBlocks * lay.bs * H * C);
  let row = 0;
  lengths.forEach((n, b) => { for (let j = 0; j < n; j++, row++) { const blk = lay.table[b * lay.maxBlocksPerSeq + Math.floor(j / lay.bs)]; pool.set(packed.subarray(row * H * C, (row + 1) * H * C), (blk * lay.bs + (j % lay.bs)) * H * C); } });
  return pool;
}
const b = createCpuFlashBackend({ threads: 2 });
const median = (xs) => [...xs].sort((a, c) => a - c)[xs.length >> 1];
const B = 8, Hq = 32, Hk = 8, S = 4096, D = 128;
for (const dtype of ['float32', 'bfloat16']) {
  const q = randn([B, Hq, D], { dtype, seed: 1 });
  const k = randn([B * S, Hk, D], { dtype, seed: 2 });
  const v = randn([B * S, Hk, D], { dtype, seed: 3 });
  const cu = (n) => tensor(Array.from({ length: B + 1 }, (_, i) => i * n), [B + 1], { dtype: 'int32' });
  const base = { cuSeqlensQ: cu(1), cuSeqlensK: cu(S), maxSeqlenQ: 1, maxSeqlenK: S, enableGqa: true, isCausal: true, alignment: 'lowerRight' };
  const calls = [['packed', normalizeVarlenParams(q, k, v, base)]];
  for (const bs of [16, 64, 256]) {
    const lay = pagedLayout(Array(B).fill(S), bs);
    const pool = (t) => tensor(toPool(t.toFloat64Array(), Array(B).fill(S), Hk, D, lay), [lay.numBlocks, bs, Hk, D], { dtype });
    calls.push([`paged ${bs}`, normalizeVarlenParams(q, pool(k), pool(v), { ...base, blockTable: tensor(lay.table, [B, lay.maxBlocksPerSeq], { dtype: 'int32' }) })]);
  }
  const res = {};
  for (let round = 0; round < 4; round++)
    for (const [name, p] of calls) {
      for (let i = 0; i < 2; i++) b.forward(p);
      const ts = [];
      for (let i = 0; i < 15; i++) { const t0 = process.hrtime.bigint(); b.forward(p); ts.push(Number(process.hrtime.bigint() - t0) / 1e6); }
      (res[name] ??= []).push(+median(ts).toFixed(2));
    }
  for (const [name, v] of Object.entries(res)) console.log(dtype, name, 'medians per round', v.join(' '), 'best', Math.min(...v));
}
