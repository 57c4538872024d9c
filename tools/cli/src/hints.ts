// Core's messages speak in API terms (enableGqa: true); on the command line the fix is a flag.

const HINTS: Readonly<Record<string, string>> = {
  ATTN_GQA: 'on the command line: add --gqa, or drop --kv-heads',
  ATTN_HEADS: 'on the command line: make --kv-heads divide H in --shape',
  ATTN_HEAD_DIM: 'on the command line: check D in --shape and --dv',
  ATTN_WINDOW: 'on the command line: --window left,right with integers >= -1',
  ATTN_DROPOUT: 'on the command line: --dropout p with 0 <= p < 1',
  ATTN_NO_DEVICE_RUNTIME: 'on the command line: pass --device cpu to run on the CPU instead',
  ATTN_DEVICE_UNAVAILABLE:
    'on the command line: pass --device cpu to run on the CPU instead; `attn doctor` shows why the runtime is unavailable',
  ATTN_DEVICE: '`attn doctor` lists the devices present',
  ATTN_NO_BACKWARD: 'on the command line: use --mode fwd, or --backends with a backend that has a backward',
  ATTN_OUT_OF_MEMORY: 'on the command line: use a smaller --shape (or --seq/--batch in bench)',
};

/** Every code that has a hint (for tests that check them all). */
export const HINT_CODES: readonly string[] = Object.keys(HINTS);

export function hintFor(code: string | undefined): string | null {
  return code ? (HINTS[code] ?? null) : null;
}
