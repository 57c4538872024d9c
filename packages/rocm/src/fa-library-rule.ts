// The rule every ROCm attention backend lists first after the device check: only the library that
// runs (see fa-library.ts) takes calls, and the reason says which one is preferred and why.
import type { Rule } from '@attn/core';
import {
  defaultFaLibraryDeps,
  describeSource,
  resolveAndWarn,
  type FaLibraryDeps,
  type RocmFaLibrary,
} from './fa-library.js';

const NAMES: Readonly<Record<RocmFaLibrary, string>> = { aotriton: 'AOTriton', ck: 'CK' };

export function rocmFaLibraryRule(library: RocmFaLibrary, deps: () => FaLibraryDeps = defaultFaLibraryDeps): Rule {
  return {
    name: 'rocmFaLibrary',
    check() {
      const choice = resolveAndWarn(deps());
      if (choice.effective === library) return null;
      if (library === 'ck') {
        if (choice.fallback !== null) {
          return `CK was preferred (${describeSource(choice)}) but AOTriton runs instead: ${choice.fallback}.`;
        }
        return (
          `AOTriton is the preferred ROCm attention library (${describeSource(choice)}); to run ${NAMES.ck} ` +
          `call preferredRocmFaLibrary('ck') from @attn/rocm.`
        );
      }
      return (
        `CK is the preferred ROCm attention library (${describeSource(choice)}); to run ${NAMES.aotriton} ` +
        `call preferredRocmFaLibrary('aotriton') from @attn/rocm.`
      );
    },
  };
}
