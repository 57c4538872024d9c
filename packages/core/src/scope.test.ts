import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerBackend } from './registry.js';
import { currentKernelScope, sdpaKernel } from './scope.js';
import { isolateRegistry, makeFakeBackend } from './testing.js';

let restore: () => void;
beforeEach(() => {
  restore = isolateRegistry();
  for (const name of ['a', 'b', 'c']) registerBackend(makeFakeBackend(name));
});
afterEach(() => restore());

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 1));

describe('sdpaKernel', () => {
  it('sets the scope for fn and returns its result', () => {
    expect(currentKernelScope()).toBeNull();
    const result = sdpaKernel(['b', 'a'], () => currentKernelScope());
    expect(result).toEqual(['b', 'a']);
    expect(currentKernelScope()).toBeNull();
  });

  it('drops duplicate names, keeping the first', () => {
    expect(sdpaKernel(['a', 'b', 'a'], () => currentKernelScope())).toEqual(['a', 'b']);
  });

  it('survives awaits and returns the promise', async () => {
    const seen = await sdpaKernel(['c'], async () => {
      await tick();
      const first = currentKernelScope();
      await tick();
      return [first, currentKernelScope()];
    });
    expect(seen).toEqual([['c'], ['c']]);
    expect(currentKernelScope()).toBeNull();
  });

  it('keeps concurrent scopes apart', async () => {
    const run = (names: string[]) =>
      sdpaKernel(names, async () => {
        await tick();
        return currentKernelScope();
      });
    const [x, y] = await Promise.all([run(['a']), run(['b'])]);
    expect(x).toEqual(['a']);
    expect(y).toEqual(['b']);
  });

  it('nests: the inner scope replaces the outer one (as PyTorch) and the outer comes back', () => {
    sdpaKernel(['a', 'b'], () => {
      expect(sdpaKernel(['c'], () => currentKernelScope())).toEqual(['c']);
      expect(currentKernelScope()).toEqual(['a', 'b']);
    });
  });

  it('restores on throw and on rejection', async () => {
    expect(() =>
      sdpaKernel(['a'], () => {
        throw new Error('sync');
      }),
    ).toThrow('sync');
    expect(currentKernelScope()).toBeNull();
    await expect(
      sdpaKernel(['a'], async () => {
        await tick();
        throw new Error('async');
      }),
    ).rejects.toThrow('async');
    expect(currentKernelScope()).toBeNull();
  });

  it('rejects unknown names, listing the registered ones, and empty lists', () => {
    expect(() => sdpaKernel(['a', 'zz'], () => 0)).toThrow(expect.objectContaining({ code: 'ATTN_UNKNOWN_BACKEND' }));
    expect(() => sdpaKernel(['zz'], () => 0)).toThrow(/registered backends are a, b, c/);
    expect(() => sdpaKernel([], () => 0)).toThrow(expect.objectContaining({ code: 'ATTN_UNKNOWN_BACKEND' }));
    expect(() => sdpaKernel('a' as never, () => 0)).toThrow(expect.objectContaining({ code: 'ATTN_UNKNOWN_BACKEND' }));
    expect(() => sdpaKernel(['a'], 5 as never)).toThrow(expect.objectContaining({ code: 'ATTN_OPTION' }));
  });
});
