import { describe, expect, it } from 'vitest';
import { HINT_CODES, hintFor } from './hints.js';

describe('hints', () => {
  it.each(HINT_CODES)('%s reads as a sentence of its own (printed after the error, not continuing it)', (code) => {
    const hint = hintFor(code)!;
    const text = hint.replace(/^on the command line: /, '');
    expect(text).not.toMatch(/^(or|and|but|then)\b/i);
    expect(text.length).toBeGreaterThan(10);
  });
});
