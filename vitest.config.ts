// Root config: each package is a vitest project with its own config.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: { projects: ['packages/*', 'tools/*', 'test/*'] },
});
