// describeGridWalk: the vitest suite that walks the feature grid (feature-grid.ts) on one device,
// with no backend restriction: core selects among every backend the test file imported. Each grid
// point must select a backend (a NoBackendError fails it, with the report) and what runs, forward
// and backward, must pass the accuracy rule against cpu-math. One test per (shape, dtype).
import { deviceToString, NoBackendError, parseDevice } from '@attn/core';
import type { DeviceLike, FloatDType } from '@attn/core';
import { FLOAT_DTYPES } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { makeInputs } from '../inputs.js';
import { compareWithReference, disposeInputs, REFERENCE } from '../run-case.js';
import { baseSeed, caseSeed, SEED_ENV } from '../seeds.js';
import { featureCombinations, gridCase, GRID_SHAPES } from './feature-grid.js';

export interface GridWalkOptions {
  /** The device of the inputs: 'cuda:0', ... */
  readonly device: DeviceLike;
  readonly dtypes?: readonly FloatDType[];
  /** Base seed; default ATTN_CONFORMANCE_SEED, else a fresh one (printed on failure). */
  readonly seed?: bigint | number;
}

/** At most this many failures are spelled out per test; the count says how many there were. */
const SHOWN = 12;

export function describeGridWalk(options: GridWalkOptions): void {
  const device = parseDevice(options.device);
  const dtypes = options.dtypes ?? FLOAT_DTYPES;
  const seed = baseSeed(options.seed);
  const rerun = `base seed ${seed} (rerun with ${SEED_ENV}=${seed})`;
  const combos = featureCombinations();
  const ranOn = new Map<string, number>();
  let index = 0;

  describe(`every feature combination runs on ${deviceToString(device)} and matches ${REFERENCE}`, () => {
    for (const shape of Object.keys(GRID_SHAPES)) {
      for (const dtype of dtypes) {
        const first = index;
        index += combos.length;
        it(`${shape}, ${dtype}: ${combos.length} combinations`, () => {
          const failures: string[] = [];
          // What went wrong, counted: 'NoBackendError', '<backend> threw <code>', '<backend>: <output>'.
          const kinds = new Map<string, number>();
          const count = (kind: string) => kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
          combos.forEach((features, n) => {
            const spec = gridCase(shape, dtype, features);
            const inputs = makeInputs(spec, caseSeed(seed, first + n), device);
            try {
              const { backend, verdicts } = compareWithReference(spec, inputs, device, null, true);
              ranOn.set(backend, (ranOn.get(backend) ?? 0) + 1);
              const bad = verdicts.filter((v) => !v.ok).map((v) => v.message);
              for (const m of bad) count(`${backend}: ${m.split(':')[0]}`);
              if (bad.length > 0) failures.push(`${spec.name} (ran on ${backend}): ${bad.join('; ')}`);
            } catch (e) {
              const noBackend = e instanceof NoBackendError || (e as { code?: unknown }).code === 'ATTN_NO_BACKEND';
              count(
                noBackend ? 'NoBackendError' : `threw ${String((e as { code?: unknown }).code ?? (e as Error).name)}`,
              );
              const what = noBackend
                ? `NoBackendError:\n${(e as Error).message}`
                : e instanceof Error
                  ? (e.stack ?? e.message)
                  : String(e);
              failures.push(`${spec.name}: ${what}`);
            } finally {
              disposeInputs(inputs);
            }
          });
          const summary = [...kinds].map(([k, c]) => `${c} x ${k}`).join(', ');
          const shown = failures.slice(0, SHOWN).join('\n');
          expect(
            failures.length,
            `${failures.length} of ${combos.length} failed (${summary}), ${rerun}:\n${shown}`,
          ).toBe(0);
        });
      }
    }

    it('says which backend ran how many grid points', () => {
      const lines = [...ranOn].sort((a, b) => b[1] - a[1]).map(([name, n]) => `${name}: ${n}`);
      console.log(`grid walk on ${deviceToString(device)}: ${index} grid points; ran on ${lines.join(', ')}`);
      expect(ranOn.size).toBeGreaterThan(0);
    });
  });
}
