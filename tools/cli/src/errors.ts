// Errors the CLI raises itself. Each carries a stable `code` and a message that says what to change.
import { AttnError } from '@attn/core';

/** Bad command-line input (exit code 2). */
export class CliUsageError extends AttnError {
  constructor(message: string) {
    super('ATTN_CLI_USAGE', message);
  }
}

/** A helper process (python3 for --compare torch) failed or answered something unreadable. */
export class CompareError extends AttnError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ATTN_CLI_COMPARE', message, options);
  }
}

/** Writing an output file (--json, --plot) failed. */
export class OutputFileError extends AttnError {
  constructor(path: string, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super('ATTN_CLI_OUTPUT', `could not write ${path}: ${why}; pick a writable path.`, { cause });
  }
}
