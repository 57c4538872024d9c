// Where a command writes. bin.ts passes the process streams; tests pass string buffers.

export interface OutStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

export interface CliIO {
  readonly stdout: OutStream;
  readonly stderr: OutStream;
  /** Process environment (PATH for python3, NO_COLOR, ...). */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
}

export function processIO(): CliIO {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() };
}

/** An IO that collects everything written (tests, --json capture). */
export function memoryIO(
  env: Record<string, string | undefined> = {},
  cwd = process.cwd(),
): CliIO & { out(): string; err(): string } {
  let out = '';
  let err = '';
  return {
    stdout: { write: (t: string) => (out += t), isTTY: false },
    stderr: { write: (t: string) => (err += t), isTTY: false },
    env,
    cwd,
    out: () => out,
    err: () => err,
  };
}

export function println(stream: OutStream, text = ''): void {
  stream.write(`${text}\n`);
}
