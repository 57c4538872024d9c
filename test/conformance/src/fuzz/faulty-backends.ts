// Backends for child-pool.test.ts, loaded in a fuzz child: one kills its process as a segfault
// would, one never returns. They prove that the pool reports a crash and a hang as failures. A
// stand-in 'cpu-math' answers the reference call that runs first (@attn/cpu depends on this
// package, not the other way round).
import { registerBackend } from '@attn/core';
import { makeFakeBackend } from '@attn/core/testing';

registerBackend(makeFakeBackend('cpu-math'));
registerBackend(
  makeFakeBackend('crashes', {
    forward: () => {
      process.kill(process.pid, 'SIGSEGV');
      throw new Error('unreachable');
    },
  }),
);
registerBackend(
  makeFakeBackend('hangs', {
    forward: () => {
      for (;;) {
        /* spins until the pool kills the child */
      }
    },
  }),
);
