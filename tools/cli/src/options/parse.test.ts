import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import {
  choiceList,
  parseDevice,
  parseNameList,
  parsePositiveInt,
  parseProbability,
  parseShape,
  parseSizeList,
  parseWindow,
} from './parse.js';

describe('option parsers', () => {
  it('reads a shape of four positive sizes', () => {
    expect(parseShape('1,8,512,64')).toEqual([1, 8, 512, 64]);
    expect(parseShape(' 2, 4 ,16,32')).toEqual([2, 4, 16, 32]);
  });

  it.each([
    ['1,8,512', /four comma-separated sizes/],
    ['1,8,512,64,2', /got 5 value/],
    ['1,0,512,64', /size H must be >= 1/],
    ['1,8,x,64', /size S: 'x' is not an integer/],
    ['1,8,1.5,64', /not an integer/],
  ])('rejects shape %s with what to write', (text, msg) => {
    expect(() => parseShape(text)).toThrow(InvalidArgumentError);
    expect(() => parseShape(text)).toThrow(msg);
  });

  it('reads size lists with a k suffix', () => {
    expect(parseSizeList('512,1k,16K')).toEqual([512, 1024, 16384]);
    expect(() => parseSizeList('512,,1k')).toThrow(/comma-separated/);
    expect(() => parseSizeList('0')).toThrow(/positive/);
    expect(() => parseSizeList('1m')).toThrow(/not a positive integer/);
  });

  it('reads windows with -1 as unbounded', () => {
    expect(parseWindow('128,0')).toEqual([128, 0]);
    expect(parseWindow('-1,-1')).toEqual([-1, -1]);
    expect(() => parseWindow('128')).toThrow(/left,right/);
    expect(() => parseWindow('-2,0')).toThrow(/>= -1/);
  });

  it('bounds probabilities and integers', () => {
    expect(parseProbability('0')).toBe(0);
    expect(parseProbability('0.25')).toBe(0.25);
    expect(() => parseProbability('1')).toThrow(/\[0, 1\)/);
    expect(() => parseProbability('')).toThrow(/\[0, 1\)/);
    expect(parsePositiveInt('3')).toBe(3);
    expect(() => parsePositiveInt('0')).toThrow(/positive/);
  });

  it('checks name lists and choices', () => {
    expect(parseNameList('cpu-math,cpu-flash')).toEqual(['cpu-math', 'cpu-flash']);
    expect(() => parseNameList('a,a')).toThrow(/listed twice/);
    expect(() => parseNameList('a,')).toThrow(/comma-separated/);
    expect(choiceList(['fwd', 'bwd'])('bwd,fwd')).toEqual(['bwd', 'fwd']);
    expect(() => choiceList(['fwd', 'bwd'])('fwd,back')).toThrow(/'back' is not one of fwd, bwd/);
  });

  it('accepts the device forms core accepts', () => {
    for (const d of ['cpu', 'cuda', 'cuda:1', 'rocm', 'rocm:0']) expect(parseDevice(d)).toBe(d);
    for (const d of ['gpu', 'cpu:1', 'cuda:', 'CUDA']) expect(() => parseDevice(d)).toThrow(/expected cpu, cuda/);
  });
});
