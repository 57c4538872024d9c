// Boolean environment switches, read as PyTorch's c10::utils::check_env reads TORCH_ROCM_* flags.

const TRUE_WORDS = new Set(['1', 'on', 'yes', 'true', 'y']);
const FALSE_WORDS = new Set(['0', 'off', 'no', 'false', 'n', '']);

export type Env = Readonly<Record<string, string | undefined>>;

export interface EnvFlag {
  /** The switch is on. An unreadable value counts as off (as PyTorch does). */
  readonly on: boolean;
  /** Set when the value is neither on nor off: what to change. Rules report it as a reason. */
  readonly error: string | null;
}

/** on for 1/on/yes/true/y; off when unset or 0/off/no/false/n (any case); anything else is an error. */
export function readEnvFlag(name: string, env: Env = process.env): EnvFlag {
  const raw = env[name];
  if (raw === undefined) return { on: false, error: null };
  const v = raw.trim().toLowerCase();
  if (TRUE_WORDS.has(v)) return { on: true, error: null };
  if (FALSE_WORDS.has(v)) return { on: false, error: null };
  return {
    on: false,
    error: `${name}=${JSON.stringify(raw)} is not a switch value (read as off): set it to 1 (on) or 0 (off), or unset it`,
  };
}
