// Writing (or, with --check, checking) a generator's output folder; shared by generate-instantiations.mjs
// and generate-bwd-instantiations.mjs.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Bring outDir in line with files (name -> text): write the files whose text differs and remove the files
 * of this generator (owns(name)) that it no longer makes. With check, write nothing: exit 1 when anything
 * is stale, naming the script to run.
 */
export function writeGenerated({ outDir, files, owns, check, label, script }) {
  mkdirSync(outDir, { recursive: true });
  const present = readdirSync(outDir).filter(owns);
  const stale = [];
  for (const [name, text] of files) {
    let old = null;
    try {
      old = readFileSync(join(outDir, name), 'utf8');
    } catch {
      old = null;
    }
    if (old !== text) stale.push(name);
    if (!check && old !== text) writeFileSync(join(outDir, name), text);
  }
  const extra = present.filter((f) => !files.has(f));
  if (check) {
    if (stale.length || extra.length) {
      console.error(`${label} are stale: ${[...stale, ...extra].join(', ')}; run node ${script}`);
      process.exit(1);
    }
    console.log(`${label} up to date (${files.size} files)`);
    return;
  }
  for (const f of extra) rmSync(join(outDir, f));
  console.log(`wrote ${stale.length} of ${files.size} files, removed ${extra.length}`);
}
