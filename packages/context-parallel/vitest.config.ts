// The reference brings vitest's `test` key into vite's config type, which vitest.shared.ts uses.
/// <reference types="vitest/config" />
import { attnVitestConfig } from '../../vitest.shared.js';

export default attnVitestConfig('@attn/context-parallel');
