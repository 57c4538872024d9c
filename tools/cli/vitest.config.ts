import { attnVitestConfig } from '../../vitest.shared';

export default attnVitestConfig('@attn/cli');
