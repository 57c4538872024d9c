// Parsers for option values. Each throws commander's InvalidArgumentError with what to write instead,
// so commander reports "option '--shape <B,H,S,D>' argument '1,2' is invalid. <message>".
import type { DeviceLike } from '@attn/core';
import { InvalidArgumentError } from 'commander';

function integer(text: string, what: string): number {
  const t = text.trim();
  if (!/^[+-]?\d+$/.test(t)) throw new InvalidArgumentError(`${what}: '${text}' is not an integer.`);
  const n = Number(t);
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError(`${what}: '${text}' is too large.`);
  return n;
}

export function parsePositiveInt(value: string): number {
  const n = integer(value, 'expected a positive integer');
  if (n < 1) throw new InvalidArgumentError(`expected a positive integer, got ${n}.`);
  return n;
}

export function parseNonNegativeInt(value: string): number {
  const n = integer(value, 'expected an integer >= 0');
  if (n < 0) throw new InvalidArgumentError(`expected an integer >= 0, got ${n}.`);
  return n;
}

/** "512,1024,2k,16k" -> [512, 1024, 2048, 16384]; a k suffix means x1024. */
export function parseSizeList(value: string): number[] {
  const parts = value.split(',').map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => p === '')) {
    throw new InvalidArgumentError(
      `expected a comma-separated list of positive integers such as 512,1k,2k, got '${value}'.`,
    );
  }
  return parts.map((p) => {
    const m = /^(\d+)([kK]?)$/.exec(p);
    if (!m) throw new InvalidArgumentError(`'${p}' is not a positive integer (a k suffix means x1024).`);
    const n = Number(m[1]) * (m[2] ? 1024 : 1);
    if (n < 1 || !Number.isSafeInteger(n)) throw new InvalidArgumentError(`'${p}' must be a positive integer.`);
    return n;
  });
}

/** "B,H,S,D": four positive integers. */
export function parseShape(value: string): [number, number, number, number] {
  const parts = value.split(',');
  if (parts.length !== 4) {
    throw new InvalidArgumentError(
      `expected four comma-separated sizes B,H,S,D (batch, heads, sequence, head dim), e.g. 1,8,512,64; got ${parts.length} value(s).`,
    );
  }
  const [b, h, s, d] = parts.map((p, i) => {
    const n = integer(p, `size ${'BHSD'[i]}`);
    if (n < 1) throw new InvalidArgumentError(`size ${'BHSD'[i]} must be >= 1, got ${n}.`);
    return n;
  });
  return [b!, h!, s!, d!];
}

/** "left,right" with -1 for an unbounded side (FlashAttention's convention). */
export function parseWindow(value: string): [number, number] {
  const parts = value.split(',');
  if (parts.length !== 2)
    throw new InvalidArgumentError(`expected 'left,right' (use -1 for unbounded), e.g. 128,0; got '${value}'.`);
  const [l, r] = parts.map((p) => integer(p, 'window side'));
  if (l! < -1 || r! < -1) throw new InvalidArgumentError(`window sides must be >= -1 (-1 = unbounded), got ${l},${r}.`);
  return [l!, r!];
}

export function parseProbability(value: string): number {
  const p = Number(value);
  if (value.trim() === '' || !Number.isFinite(p) || p < 0 || p >= 1) {
    throw new InvalidArgumentError(`expected a dropout probability in [0, 1), got '${value}'.`);
  }
  return p;
}

export function parsePositiveNumber(value: string): number {
  const x = Number(value);
  if (value.trim() === '' || !Number.isFinite(x) || x <= 0)
    throw new InvalidArgumentError(`expected a number > 0, got '${value}'.`);
  return x;
}

/** "flash-cuda,cpu-math" -> names; duplicates and empty names are errors. */
export function parseNameList(value: string): string[] {
  const names = value.split(',').map((s) => s.trim());
  if (names.some((n) => n === ''))
    throw new InvalidArgumentError(`expected comma-separated names such as cpu-math,cpu-flash, got '${value}'.`);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup !== undefined) throw new InvalidArgumentError(`'${dup}' is listed twice.`);
  return names;
}

/** 'cpu', 'cuda', 'cuda:1', 'rocm', 'rocm:0'. */
export function parseDevice(value: string): DeviceLike {
  if (!/^(cpu|cuda|rocm)(:\d+)?$/.test(value) || value.startsWith('cpu:')) {
    throw new InvalidArgumentError(`expected cpu, cuda, cuda:N, rocm or rocm:N, got '${value}'.`);
  }
  return value as DeviceLike;
}

/** A comma list restricted to the given choices. */
export function choiceList<T extends string>(choices: readonly T[]): (value: string) => T[] {
  return (value) => {
    const names = parseNameList(value);
    const bad = names.find((n) => !(choices as readonly string[]).includes(n));
    if (bad !== undefined) throw new InvalidArgumentError(`'${bad}' is not one of ${choices.join(', ')}.`);
    return names as T[];
  };
}
