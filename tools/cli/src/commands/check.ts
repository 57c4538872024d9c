// `attn check`: the conformance cases on the installed backends, against cpu-math (float64) with the
// accuracy rule of the test suite: a quick answer to "does this install compute correctly here?".
// Exit 1 when any case fails; the last line is 'N passed, N failed'.
import { listBackends, parseDevice, type DeviceLike } from '@attn/core';
import { checkBackend, type CaseResult } from '@attn/conformance/check';
import { Command, Option } from 'commander';
import { CliUsageError } from '../errors.js';
import { println } from '../io.js';
import { benchBackends } from '../runtime/backends.js';
import { parseDevice as parseDeviceFlag, parseNameList } from '../options/parse.js';
import { resolveDevice, type ContextProvider } from './context.js';

interface CheckFlags {
  backends?: string[];
  device?: DeviceLike;
  full?: boolean;
  seed?: string;
}

export function checkCommand(getContext: ContextProvider): Command {
  return new Command('check')
    .description('run the conformance cases on the installed backends against cpu-math (the float64 reference)')
    .addOption(
      new Option(
        '--backends <names>',
        'backends to check (default: every available one on the device but cpu-math)',
      ).argParser(parseNameList),
    )
    .addOption(
      new Option(
        '--device <device>',
        'cpu, cuda, cuda:N, rocm or rocm:N (default: the first GPU present, else cpu)',
      ).argParser(parseDeviceFlag),
    )
    .addOption(new Option('--full', 'every case at every size (default: the large shapes in one dtype only)'))
    .addOption(new Option('--seed <n>', 'base seed of the random inputs (default: fresh; printed for a rerun)'))
    .action(async (flags: CheckFlags) => {
      const { io, packages, setExitCode } = await getContext();
      const device = parseDevice(resolveDevice(flags.device));
      const names = (flags.backends ?? benchBackends(device.type, null, packages).map((b) => b.name)).filter(
        (n) => n !== 'cpu-math' || flags.backends,
      );
      if (names.length === 0)
        throw new CliUsageError(
          `No backend to check on '${device.type}' but the reference itself; pass --backends cpu-math to check it.`,
        );
      if (!listBackends().some((e) => e.backend.name === 'cpu-math'))
        throw new CliUsageError("The reference 'cpu-math' is not registered: install @attn/cpu.");
      let seed: bigint | undefined;
      try {
        seed = flags.seed === undefined ? undefined : BigInt(flags.seed);
      } catch {
        throw new CliUsageError(`--seed takes an integer, got '${flags.seed}'.`);
      }
      let passed = 0;
      let failed = 0;
      for (const name of names) {
        const tally = { passed: 0, declined: 0, backward: 0 };
        const report = checkBackend(name, {
          device,
          quick: !flags.full,
          ...(seed === undefined ? {} : { seed }),
          onCase: (caseName: string, r: CaseResult) => {
            if (r.status === 'passed') {
              tally.passed++;
              if (r.ran === 'forward+backward') tally.backward++;
            } else if (r.status === 'declined') tally.declined++;
            else println(io.stdout, `FAIL ${name} ${caseName}\n  ${r.failures.join('\n  ')}`);
          },
        });
        const bad = report.cases.filter((c) => c.result.status === 'failed').length;
        passed += tally.passed;
        failed += bad;
        println(
          io.stdout,
          `${name} on ${device.type}:${device.index}: ${tally.passed} cases passed (${tally.backward} with backward), ${bad} failed, ${tally.declined} declined by its rules; seed ${report.seed} (rerun: --seed ${report.seed})`,
        );
      }
      println(io.stdout, `${passed} passed, ${failed} failed`);
      if (failed > 0) setExitCode(1);
    });
}
