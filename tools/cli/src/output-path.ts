// Output files (bench --json, --plot) are checked before any work: a bench grid runs for minutes,
// and a path that cannot be written used to fail only after the whole grid had run.
import { accessSync, constants, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { CliUsageError } from './errors.js';

/** Throws CliUsageError (exit 2) unless `path` can be created or overwritten now. */
export function checkOutputWritable(path: string, flag: string): void {
  const full = resolve(path);
  const dir = dirname(full);
  let folder;
  try {
    folder = statSync(dir);
  } catch {
    throw new CliUsageError(`${flag} ${path}: the folder ${dir} does not exist; create it first or pick another path.`);
  }
  if (!folder.isDirectory()) throw new CliUsageError(`${flag} ${path}: ${dir} is not a folder; pick another path.`);
  let existing;
  try {
    existing = statSync(full);
  } catch {
    existing = null;
  }
  if (existing?.isDirectory()) throw new CliUsageError(`${flag} ${path}: that is a folder; give a file name.`);
  try {
    accessSync(existing ? full : dir, constants.W_OK);
  } catch {
    throw new CliUsageError(
      `${flag} ${path}: ${existing ? 'the file' : `the folder ${dir}`} is not writable; pick another path.`,
    );
  }
}
