import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findNccl, headerVersion, type NcclProbe, systemProbe } from './find.js';

const HEADER = '#define NCCL_MAJOR 2\n#define NCCL_MINOR 30\n#define NCCL_PATCH 7\n';
let root = '';

function touch(path: string, text = ''): string {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
}

/** The real file system under a temp root, with the environment, ldconfig, Python and fetched wheel given. */
function probe(
  env: Record<string, string>,
  sites: string[] = [],
  ldconfig: string[] = [],
  fetchedWheel: string | null = null,
): NcclProbe {
  return { ...systemProbe, env, sitePackages: () => sites, ldconfigNccl: () => ldconfig, fetchedWheel };
}

afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('findNccl', () => {
  it('reads the version from nccl.h', () => {
    expect(headerVersion(HEADER)).toBe('2.30.7');
    expect(headerVersion('#define NCCL_MAJOR 2')).toBeNull();
  });

  it('NCCL_HOME first, with the header version', () => {
    root = mkdtempSync(join(tmpdir(), 'nccl-'));
    touch(join(root, 'home', 'include', 'nccl.h'), HEADER);
    touch(join(root, 'home', 'lib', 'libnccl.so'));
    touch(join(root, 'wheel', 'nvidia', 'nccl', 'include', 'nccl.h'), HEADER);
    touch(join(root, 'wheel', 'nvidia', 'nccl', 'lib', 'libnccl.so.2'));
    const r = findNccl(probe({ NCCL_HOME: join(root, 'home') }, [], [], join(root, 'wheel')));
    expect(r.build).toMatchObject({
      source: 'NCCL_HOME',
      library: join(root, 'home', 'lib', 'libnccl.so'),
      version: '2.30.7',
    });
  });

  it('the wheel the build fetched comes last, links libnccl.so.2 (the only library it ships) and is a run-time copy', () => {
    root = mkdtempSync(join(tmpdir(), 'nccl-'));
    const wheel = join(root, 'build', 'nccl-wheel');
    touch(join(wheel, 'nvidia', 'nccl', 'include', 'nccl.h'), HEADER);
    touch(join(wheel, 'nvidia', 'nccl', 'lib', 'libnccl.so.2'));
    mkdirSync(join(wheel, 'nvidia_nccl_cu13-2.30.7.dist-info'));
    // Nothing else on this (fake) machine: every other root is under the temp folder and empty.
    const none = join(root, 'none');
    const r = findNccl({
      ...probe({ NCCL_HOME: none, CUDA_HOME: none }, [none], [], wheel),
      exists: (p) => p.startsWith(root) && existsSync(p),
    });
    expect(r.build).toMatchObject({
      source: 'fetched-wheel',
      library: join(wheel, 'nvidia', 'nccl', 'lib', 'libnccl.so.2'),
      version: '2.30.7',
    });
    expect(r.buildTried.at(-1)).toBe(`fetched-wheel: ${join(wheel, 'nvidia', 'nccl', 'include')}`);
    expect(r.pythonCopies).toEqual([
      { source: 'fetched-wheel', path: join(wheel, 'nvidia', 'nccl', 'lib', 'libnccl.so.2'), version: '2.30.7' },
    ]);
    expect(r.summary).toMatch(/fetched wheel copy 2\.30\.7 at .*nccl-wheel/);
    // A site-packages wheel is preferred to the fetched one.
    const site = join(root, 'site');
    touch(join(site, 'nvidia', 'nccl', 'include', 'nccl.h'), HEADER);
    touch(join(site, 'nvidia', 'nccl', 'lib', 'libnccl.so.2'));
    const both = findNccl({ ...probe({}, [site], [], wheel), exists: (p) => p.startsWith(root) && existsSync(p) });
    expect(both.build?.source).toBe('site-packages');
  });

  it('run time: LD_LIBRARY_PATH before ldconfig; a PyTorch copy in site-packages is listed with its wheel version', () => {
    root = mkdtempSync(join(tmpdir(), 'nccl-'));
    const real = touch(join(root, 'ld', 'libnccl.so.2.28.3'));
    symlinkSync(real, join(root, 'ld', 'libnccl.so.2'));
    const cached = touch(join(root, 'cache', 'libnccl.so.2'));
    const site = join(root, 'site');
    touch(join(site, 'nvidia', 'nccl', 'lib', 'libnccl.so.2'));
    mkdirSync(join(site, 'nvidia_nccl_cu13-2.30.7.dist-info'));
    const r = findNccl(probe({ LD_LIBRARY_PATH: `/nonexistent:${join(root, 'ld')}` }, [site], [cached]));
    expect(r.runtime).toMatchObject({
      source: 'LD_LIBRARY_PATH',
      path: join(root, 'ld', 'libnccl.so.2'),
      version: '2.28.3',
    });
    expect(r.pythonCopies).toEqual([
      { source: 'site-packages', path: join(site, 'nvidia', 'nccl', 'lib', 'libnccl.so.2'), version: '2.30.7' },
    ]);
    expect(r.runtimeTried[0]).toBe('LD_LIBRARY_PATH: /nonexistent/libnccl.so.2');
    // The site-packages wheel also serves a build (headers missing here: it says so by not matching).
    expect(r.build?.source).not.toBe('site-packages');
    const again = findNccl(probe({}, [site], [cached]));
    expect(again.runtime).toMatchObject({ source: 'ldconfig', path: cached });
  });

  it('none: says where it looked and how to get it', () => {
    root = mkdtempSync(join(tmpdir(), 'nccl-'));
    const p: NcclProbe = { ...probe({ NCCL_HOME: join(root, 'none') }), exists: () => false };
    const r = findNccl(p);
    expect(r.build).toBeNull();
    expect(r.runtime).toBeNull();
    expect(r.buildTried[0]).toBe(`NCCL_HOME: ${join(root, 'none', 'include')}`);
    expect(r.summary).toMatch(/no libnccl\.so\.2 on the loader path/);
    expect(r.summary).toMatch(/fetch the nvidia-nccl-cu13 wheel/);
  });
});
