// The `attn` program: commands, and how errors become messages and exit codes.
//   0: success; 1: the work failed (no backend ran, bad input to core, device error); 2: usage error.
import { formatReport, type SelectionReport } from '@attn/core';
import { Command, CommanderError } from 'commander';
import { benchCommand } from './commands/bench.js';
import { buildCommand } from './commands/build.js';
import { checkCommand } from './commands/check.js';
import { openContext, type CommandContext } from './commands/context.js';
import { doctorCommand } from './commands/doctor.js';
import { explainCommand } from './commands/explain.js';
import { runCommand } from './commands/run.js';
import { hintFor } from './hints.js';
import { processIO, println, type CliIO } from './io.js';

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

function buildProgram(getContext: () => Promise<CommandContext>, io: CliIO): Command {
  const program = new Command('attn')
    .description('scaled-dot-product attention backends: what is installed, which runs and why, how fast')
    .version('0.1.0')
    .option('--debug', 'print the stack with an error (accepted anywhere on the command line)')
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .exitOverride();
  for (const cmd of [
    doctorCommand(getContext),
    explainCommand(getContext),
    runCommand(getContext),
    benchCommand(getContext),
    checkCommand(getContext),
    buildCommand(io),
  ]) {
    cmd
      .exitOverride()
      .showHelpAfterError('(run with --help for usage)')
      .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });
    program.addCommand(cmd);
  }
  return program;
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Prints an error the way a user needs it (with its stack under --debug) and returns the exit code. */
export function reportError(err: unknown, io: CliIO, debug = false): number {
  if (err instanceof CommanderError) {
    // commander already printed the message (and help where asked)
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help')
      return EXIT_OK;
    return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  }
  const code = errorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  if (code === 'ATTN_CLI_USAGE') {
    println(io.stderr, `error: ${message}`);
    return EXIT_USAGE;
  }
  if (code === 'ATTN_NO_BACKEND') {
    const report = (err as { report?: SelectionReport }).report;
    println(io.stderr, report ? `error: no backend can run this call\n${formatReport(report)}` : `error: ${message}`);
    return EXIT_FAILED;
  }
  println(io.stderr, `error: ${message}${code ? ` [${code}]` : ''}`);
  const hint = hintFor(code);
  if (hint) println(io.stderr, `hint: ${hint}`);
  if (debug && err instanceof Error && err.stack) println(io.stderr, err.stack);
  return EXIT_FAILED;
}

/** Runs `attn` with `argv` (without node and the script) and returns the exit code. */
export async function main(argv: readonly string[], io: CliIO = processIO()): Promise<number> {
  let exitCode = EXIT_OK;
  let context: Promise<CommandContext> | null = null;
  const getContext = () => (context ??= openContext(io, (c) => (exitCode = Math.max(exitCode, c))));
  const program = buildProgram(getContext, io);
  // --debug is the program's, wherever it stands: the commands never see it.
  const debug = argv.includes('--debug');
  const args = argv.filter((a) => a !== '--debug');
  try {
    if (args.length === 0) {
      program.outputHelp();
      return EXIT_USAGE;
    }
    await program.parseAsync(args, { from: 'user' });
    return exitCode;
  } catch (err) {
    return reportError(err, io, debug);
  }
}
