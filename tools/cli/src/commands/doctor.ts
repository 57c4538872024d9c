// `attn doctor`: what this machine has, which backends are installed and available, and how they were built.
import { Command, Option } from 'commander';
import { collectDoctor } from '../doctor/collect.js';
import { formatDoctor } from '../doctor/format.js';
import { ncclSection } from '../doctor/nccl.js';
import { println } from '../io.js';
import type { ContextProvider } from './context.js';

export function doctorCommand(getContext: ContextProvider): Command {
  return new Command('doctor')
    .description('report the CPU, GPUs, installed backend packages, and why each backend is or is not available')
    .addOption(new Option('--json', 'print the report as JSON'))
    .action(async (flags: { json?: boolean }) => {
      const { io, packages } = await getContext();
      const report = { ...collectDoctor(packages), nccl: await ncclSection() };
      println(io.stdout, flags.json ? JSON.stringify(report, null, 2) : formatDoctor(report));
    });
}
