import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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

/** The real file system under a temp root, with the environment, ldconfig and Python given. */
function probe(env: Record<string, string>, sites: string[] = [], ldconfig: string[] = []): NcclProbe {
  return { ...systemProbe, env, sitePackages: () => sites, ldconfigNccl: () => ldconfig };
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
    const r = findNccl(probe({ NCCL_HOME: join(root, 'home'), ATTN_NCCL_WHEEL_DIR: join(root, 'wheel') }));
    expect(r.build).toMatchObject({
      source: 'NCCL_HOME',
      library: join(root, 'home', 'lib', 'libnccl.so'),
      version: '2.30.7',
    });
  });

  it('an extracted wheel (ATTN_NCCL_WHEEL_DIR) links libnccl.so.2, the only library it ships', () => {
    root = mkdtempSync(join(tmpdir(), 'nccl-'));
    touch(join(root, 'wheel', 'nvidia', 'nccl', 'include', 'nccl.h'), HEADER);
    touch(join(root, 'wheel', 'nvidia', 'nccl', 'lib', 'libnccl.so.2'));
    const r = findNccl(probe({ ATTN_NCCL_WHEEL_DIR: join(root, 'wheel') }));
    expect(r.build).toMatchObject({
      source: 'ATTN_NCCL_WHEEL_DIR',
      library: join(root, 'wheel', 'nvidia', 'nccl', 'lib', 'libnccl.so.2'),
    });
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
    expect(r.summary).toMatch(/pip download nvidia-nccl-cu13/);
  });
});
