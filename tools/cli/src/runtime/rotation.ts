// Allocates the input sets a timing loop rotates over.
import { rotationSets } from '../timing/measure.js';
import type { ProblemSpec } from '../problem.js';
import { disposeInputs, inputBytes, makeInputs, type ProblemInputs } from './inputs.js';
import type { Target } from './target.js';

/** Share of the device memory that rotated inputs may take. */
const MEMORY_SHARE = 0.25;

export function allocateSets(p: ProblemSpec, target: Target, max = 8): ProblemInputs[] {
  const first = makeInputs(p, 0);
  const count = rotationSets(inputBytes(first), target.cacheBytes, target.memoryBytes * MEMORY_SHARE, max);
  const sets = [first];
  for (let i = 1; i < count; i++) sets.push(makeInputs(p, i));
  return sets;
}

export function disposeSets(sets: readonly ProblemInputs[]): void {
  sets.forEach(disposeInputs);
}
