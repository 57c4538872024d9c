import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exchangeUniqueId, FileRendezvous, NCCL_UNIQUE_ID_BYTES } from './file.js';

let dir = '';
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('FileRendezvous', () => {
  it("every rank gets rank 0's id, whichever starts first", async () => {
    dir = mkdtempSync(join(tmpdir(), 'rdv-'));
    const rdv = new FileRendezvous(join(dir, 'job'));
    const id = randomBytes(NCCL_UNIQUE_ID_BYTES);
    // Ranks 1..3 wait before rank 0 publishes.
    const others = [1, 2, 3].map((r) => exchangeUniqueId(rdv, r, 'nccl-id', () => new Uint8Array(0), 5000));
    await new Promise((r) => setTimeout(r, 30));
    const mine = await exchangeUniqueId(rdv, 0, 'nccl-id', () => id);
    for (const got of await Promise.all(others)) expect(Buffer.from(got).equals(Buffer.from(mine))).toBe(true);
  });

  it('across processes: a child publishes, this process reads', async () => {
    dir = mkdtempSync(join(tmpdir(), 'rdv-'));
    const hex = randomBytes(NCCL_UNIQUE_ID_BYTES).toString('hex');
    const reading = new FileRendezvous(dir).lookup('id', 20_000);
    const script =
      "const fs=require('fs'),p=require('path');const [d,h]=process.argv.slice(1);" +
      "const t=p.join(d,'.id.tmp');fs.writeFileSync(t,Buffer.from(h,'hex'));fs.renameSync(t,p.join(d,'id'));";
    const child = spawn(process.execPath, ['-e', script, dir, hex], { stdio: 'ignore' });
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect(code).toBe(0);
    expect(Buffer.from(await reading).toString('hex')).toBe(hex);
  });

  it('times out with a reason; refuses bad keys and ids of the wrong size', async () => {
    dir = mkdtempSync(join(tmpdir(), 'rdv-'));
    const rdv = new FileRendezvous(dir);
    await expect(rdv.lookup('never', 50)).rejects.toMatchObject({
      code: 'ATTN_CP_TRANSPORT',
      message: expect.stringMatching(/within 50 ms/),
    });
    await expect(rdv.publish('../x', new Uint8Array(1))).rejects.toMatchObject({ code: 'ATTN_CP_TRANSPORT' });
    await expect(exchangeUniqueId(rdv, 0, 'id', () => new Uint8Array(3))).rejects.toMatchObject({
      code: 'ATTN_CP_TRANSPORT',
    });
    await rdv.publish('short', new Uint8Array(5));
    await expect(exchangeUniqueId(rdv, 1, 'short', () => new Uint8Array(0), 1000)).rejects.toMatchObject({
      code: 'ATTN_CP_TRANSPORT',
    });
  });
});
