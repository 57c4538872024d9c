// `attn explain`: which backend would run a problem, and why each other candidate declines.
import { explain, formatReport } from '@attn/core';
import { Command, Option } from 'commander';
import { println } from '../io.js';
import { addShapeOptions, problemFrom, type ShapeFlags } from '../options/problem-options.js';
import { describeFeatures, describeShape } from '../problem.js';
import { checkBackendNames } from '../runtime/backends.js';
import { disposeInputs, emptyInputs, sdpaOptions } from '../runtime/inputs.js';
import { resolveDevice, type ContextProvider } from './context.js';

interface ExplainFlags extends ShapeFlags {
  json?: boolean;
}

export function explainCommand(getContext: ContextProvider): Command {
  const cmd = new Command('explain').description('show which backend would run a call and why the others decline');
  addShapeOptions(cmd).addOption(new Option('--json', 'print the report as JSON'));
  return cmd.action(async (flags: ExplainFlags) => {
    const { io, packages } = await getContext();
    const problem = problemFrom(flags, resolveDevice(flags.device));
    if (flags.backends) checkBackendNames(flags.backends, packages);
    const inputs = emptyInputs(problem);
    try {
      const report = explain(
        inputs.query,
        inputs.key,
        inputs.value,
        sdpaOptions(problem, inputs, flags.backends ?? null),
      );
      if (flags.json) {
        println(io.stdout, JSON.stringify({ problem, report }, null, 2));
        return;
      }
      println(io.stdout, `${describeShape(problem)}, ${problem.dtype}, ${describeFeatures(problem)}`);
      println(io.stdout, formatReport(report));
    } finally {
      disposeInputs(inputs);
    }
  });
}
