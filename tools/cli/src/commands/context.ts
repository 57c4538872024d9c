// What every command needs before it starts: the backend packages loaded, the device resolved, and a
// way to set the exit code without touching process state (tests run commands in-process).
import type { DeviceLike } from '@attn/core';
import type { CliIO } from '../io.js';
import { defaultDevice } from '../runtime/backends.js';
import { loadPackages, type PackageStatus } from '../runtime/packages.js';

export interface CommandContext {
  readonly io: CliIO;
  readonly packages: readonly PackageStatus[];
  /** Sets the exit code of this invocation (e.g. 1 when no backend could run). */
  setExitCode(code: number): void;
}

export type ContextProvider = () => Promise<CommandContext>;

export async function openContext(io: CliIO, setExitCode: (code: number) => void): Promise<CommandContext> {
  return { io, packages: await loadPackages(), setExitCode };
}

export function resolveDevice(flag: DeviceLike | undefined): DeviceLike {
  return flag ?? defaultDevice();
}
