// Which package folder `attn-native build <spec>` builds: '.' (default) is the package in the
// working folder; a name ('@attn/flash-cuda', or 'flash-cuda' for short) is resolved from the
// working folder as Node would import it, so the build lands in the installed copy.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

export function resolvePackage(spec: string, cwd: string = process.cwd()): string {
  if (spec === '.' || spec.startsWith('./') || spec.startsWith('/') || spec.startsWith('../')) {
    const dir = resolve(cwd, spec);
    if (!existsSync(join(dir, 'package.json'))) throw new Error(`${dir} holds no package.json`);
    return dir;
  }
  const name = spec.startsWith('@') ? spec : `@attn/${spec}`;
  try {
    return dirname(createRequire(join(cwd, 'package.json')).resolve(`${name}/package.json`));
  } catch {
    throw new Error(`${name} is not installed here (${cwd}); install it first: \`npm install ${name}\``);
  }
}
