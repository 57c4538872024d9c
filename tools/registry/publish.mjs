// Packs every public package of the workspace with pnpm (which turns `workspace:` ranges into the
// versions) and publishes the tarballs to the test registry with npm. The prebuilt platform packages
// are published with the binaries this checkout built: one missing is an error, never a silent skip,
// except a package for another CPU (linux-arm64-gnu on an x64 host), which only the release build
// makes (tools/release/build-prebuilts.sh cross-compiles it): that one is left out, and said so.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

function run(cmd, args, opts) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...opts });
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status}) in ${opts.cwd}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** Every non-private workspace package: [{ name, version, path }]. */
export function publicPackages(root) {
  const list = JSON.parse(run('pnpm', ['ls', '-r', '--json', '--depth', '-1'], { cwd: root }));
  return list.filter((p) => !p.private && p.name).map(({ name, version, path }) => ({ name, version, path }));
}

/**
 * Packs and publishes each package. Returns { published: [{ name, bytes }] (tarball sizes, in
 * publishing order), unbuilt: [{ name, reason }] (platform packages left out, and why) }.
 */
export function publishAll(root, registry, packDir, log) {
  mkdirSync(packDir, { recursive: true });
  const published = [];
  const unbuilt = [];
  for (const pkg of publicPackages(root)) {
    const manifest = JSON.parse(readFileSync(join(pkg.path, 'package.json'), 'utf8'));
    const missing = (manifest.files ?? []).filter((f) => f.endsWith('.node') && !existsSync(join(pkg.path, f)));
    if (missing.length > 0 && manifest.cpu && !manifest.cpu.includes(process.arch)) {
      const reason = `its ${manifest.cpu.join('/')} binary is cross-built by the release build (tools/release/build-prebuilts.sh), not on this ${process.arch} machine`;
      unbuilt.push({ name: pkg.name, reason });
      log(`not published: ${pkg.name} (${reason})`);
      continue;
    }
    if (missing.length > 0) {
      // packages/<addon>/npm/<platform>/: the addon package's build says why it skipped, if it did.
      const skipped = join(pkg.path, '..', '..', 'build', 'SKIPPED');
      if (!existsSync(skipped)) {
        throw new Error(`${pkg.name} has no ${missing.join(', ')}: build the native addons first (pnpm build:native)`);
      }
      const reason = readFileSync(skipped, 'utf8').trim();
      unbuilt.push({ name: pkg.name, reason });
      log(`not published: ${pkg.name} (its addon was not built here: ${reason})`);
      continue;
    }
    const out = run('pnpm', ['pack', '--pack-destination', packDir], { cwd: pkg.path }).trim().split('\n');
    const tarball = out[out.length - 1].trim();
    run('npm', ['publish', tarball, '--registry', registry.url, '--tag', 'latest'], {
      cwd: packDir,
      env: registry.env,
    });
    const bytes = statSync(tarball).size;
    published.push({ name: pkg.name, bytes });
    log(`published ${pkg.name}@${pkg.version} (${(bytes / 1048576).toFixed(2)} MB packed)`);
  }
  return { published, unbuilt };
}
