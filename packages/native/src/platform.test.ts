import { describe, expect, it } from 'vitest';
import { detectLibc, platformTag, prebuiltPackageName } from './platform.js';

describe('platformTag', () => {
  it('names Linux builds by their C library, other systems by os and arch', () => {
    expect(platformTag('linux', 'x64', 'gnu')).toBe('linux-x64-gnu');
    expect(platformTag('linux', 'arm64', 'musl')).toBe('linux-arm64-musl');
    expect(platformTag('darwin', 'arm64')).toBe('darwin-arm64');
    expect(platformTag('win32', 'x64')).toBe('win32-x64');
  });

  it('tells glibc from musl by the runtime glibc version Node reports', () => {
    expect(detectLibc(() => ({ header: { glibcVersionRuntime: '2.36' } }))).toBe('gnu');
    expect(detectLibc(() => ({ header: {} }))).toBe('musl');
    if (process.platform === 'linux') expect(['gnu', 'musl']).toContain(detectLibc());
  });

  it('makes the prebuilt package name', () => {
    expect(prebuiltPackageName('@attn/cpu', 'linux-x64-gnu')).toBe('@attn/cpu-linux-x64-gnu');
  });
});
