import { cpuFlashBackend } from '@attn/cpu';
import { describe, expect, it } from 'vitest';
import { memoryIO } from '../io.js';
import { main } from '../program.js';

describe('attn check', () => {
  const flash = cpuFlashBackend.availability();
  if (!flash.ok) console.log(`skipped: cpu-flash is unavailable here: ${flash.reason}`);
  it.skipIf(!flash.ok)("runs the conformance cases on cpu-flash and ends with 'N passed, N failed'", async () => {
    const io = memoryIO();
    const code = await main(['check', '--device', 'cpu', '--backends', 'cpu-flash', '--seed', '7'], io);
    const lines = io.out().trim().split('\n');
    expect(code, io.out() + io.err()).toBe(0);
    expect(lines.at(-2)).toMatch(
      /^cpu-flash on cpu:0: \d+ cases passed \(\d+ with backward\), 0 failed, \d+ declined by its rules; seed 7/,
    );
    expect(lines.at(-1)).toMatch(/^[1-9]\d* passed, 0 failed$/);
  });

  it('refuses a bad seed', async () => {
    const io = memoryIO();
    expect(await main(['check', '--device', 'cpu', '--backends', 'cpu-math', '--seed', 'x'], io)).toBe(2);
    expect(io.err()).toMatch(/--seed takes an integer, got 'x'/);
  });
});
