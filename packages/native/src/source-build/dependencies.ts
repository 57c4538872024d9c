// The folders of the @attn packages an addon package depends on, directly or through another
// @attn package, resolved as Node resolves them from the package that declares each. The build gets
// them as ATTN_DIR_<NAME> (ATTN_DIR_NATIVE, ATTN_DIR_CUDA, ...), so no CMakeLists reaches outside its
// own folder by a relative path: only into packages it declared.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { readPackageJson } from '../package-json.js';

/** '@attn/cuda' -> 'ATTN_DIR_CUDA', '@attn/rocm-aotriton' -> 'ATTN_DIR_ROCM_AOTRITON'. */
export function dirVariable(packageName: string): string {
  return `ATTN_DIR_${packageName
    .replace(/^@attn\//, '')
    .replaceAll('-', '_')
    .toUpperCase()}`;
}

function declared(root: string): string[] {
  const pkg = readPackageJson(root);
  const names = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})]);
  return [...names].filter((n) => n.startsWith('@attn/'));
}

/** ATTN_DIR_<NAME> -> folder, for every @attn package reachable from `root`; unresolvable ones are left out. */
export function dependencyDirs(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const queue = [root];
  const seen = new Set<string>([root]);
  while (queue.length > 0) {
    const from = queue.shift()!;
    const req = createRequire(join(from, 'package.json'));
    for (const name of declared(from)) {
      let dir: string;
      try {
        dir = dirname(req.resolve(`${name}/package.json`));
      } catch {
        continue; // an optional peer that is not installed; the CMakeLists says so if it needs it
      }
      out[dirVariable(name)] ??= dir;
      if (!seen.has(dir)) {
        seen.add(dir);
        queue.push(dir);
      }
    }
  }
  return out;
}
