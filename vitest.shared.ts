// Shared vitest settings for every package: read workspace sources through the '@attn/source'
// export condition (no build needed), and run files in forked processes because native addons
// do not like worker threads.
import { defaultServerConditions, defineConfig } from 'vite';

export function attnVitestConfig(name: string) {
  return defineConfig({
    resolve: { conditions: ['@attn/source', ...defaultServerConditions] },
    ssr: { resolve: { conditions: ['@attn/source', ...defaultServerConditions] } },
    test: {
      name,
      pool: 'forks',
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      testTimeout: 60_000,
      restoreMocks: true,
    },
  });
}
