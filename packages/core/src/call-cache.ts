// Validation and selection cached per call signature. A loop of calls of one shape (decode steps,
// training steps, benches) validates the same layouts and options every time and selects the same
// backend: the first call of a signature runs everything and leaves an entry; later calls of that
// signature reuse the normalized params skeleton and the selection path, and only redo what depends on
// more than the signature:
// - every tensor is a live Tensor (brand, not disposed, host buffer not detached);
// - out shares no memory with an input (addresses);
// - dropout's seed (fresh per call) and offset, float8 inputs' descale factors (values, often new each
//   step; the dtypes, part of the signature, say whether there are any), and whether the device is
//   capturing a graph;
// - each backend on the selection path is still available, and its rules with readsValues pass.
// Calls that read index values on the host (varlen offsets, sequsedK lengths, a block table, unless
// they stay on the device) are never cached: their validation and selection depend on those values.
// An entry is stale once the registry's generation moves (a backend or runtime registered or removed,
// a priority changed) or the registry state is swapped.
import type { Backend, Rule, RuleContext } from './backend.js';
import type { DType } from './dtype.js';
import type { Descale, DropoutParams, MaskParams, PagedKvParams, SdpaParams, VarlenParams } from './params.js';
import { type RegistryState, registryState } from './registry-state.js';
import { Tensor } from './tensor.js';

/** What the cache compares of a tensor: everything but its storage (the dtype included: a float8_e4m3 call and a bfloat16 one of one shape never share an entry). */
interface Layout {
  readonly dtype: DType;
  readonly type: string;
  readonly index: number;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly offset: number;
}

function layoutOf(t: unknown): Layout | null {
  if (!Tensor.isTensor(t)) return null;
  return {
    dtype: t.dtype,
    type: t.device.type,
    index: t.device.index,
    shape: t.shape,
    strides: t.strides,
    offset: t.offset,
  };
}

function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** `t` is a Tensor of that layout, or both are absent (undefined and null alike). */
function matchesLayout(l: Layout | null, t: unknown): boolean {
  if (l === null) return t === undefined || t === null;
  if (!Tensor.isTensor(t)) return false;
  return (
    t.dtype === l.dtype &&
    t.device.type === l.type &&
    t.device.index === l.index &&
    t.offset === l.offset &&
    sameNumbers(t.shape, l.shape) &&
    sameNumbers(t.strides, l.strides)
  );
}

/** A shallow copy of an option array (window, backends), so that the user editing theirs cannot reach the entry. */
function copyList(v: unknown): unknown {
  return Array.isArray(v) ? [...(v as unknown[])] : v;
}

function sameList(stored: unknown, v: unknown): boolean {
  if (!Array.isArray(stored) || !Array.isArray(v)) return stored === v;
  if (stored.length !== v.length) return false;
  for (let i = 0; i < v.length; i++) if (stored[i] !== v[i]) return false;
  return true;
}

/** The entry points whose calls are cached, and which option keys each one's signature reads. */
export interface CallKind {
  /** Options holding tensors, compared by layout. */
  readonly tensorKeys: readonly string[];
  /** Options compared by value (===): every other option that validation or selection reads. */
  readonly scalarKeys: readonly string[];
  /** Options holding arrays, compared element by element. */
  readonly listKeys: readonly string[];
}

const COMMON_SCALARS = [
  'dropoutP',
  'isCausal',
  'alignment',
  'scale',
  'enableGqa',
  'softcap',
  'requiresGrad',
  'deterministic',
  'indexValuesOnDevice',
  'kernel',
];
const COMMON_LISTS = ['window', 'backends'];

// dropoutSeed, dropoutOffset and descale are left out: they are values, checked on every call
// (checkDropout, checkDescale).
export const DENSE_CALL: CallKind = Object.freeze({
  tensorKeys: ['attnMask', 'alibiSlopes', 'sequsedK', 'out'],
  scalarKeys: COMMON_SCALARS,
  listKeys: COMMON_LISTS,
});

export const VARLEN_CALL: CallKind = Object.freeze({
  tensorKeys: ['alibiSlopes', 'sequsedK', 'out', 'cuSeqlensQ', 'cuSeqlensK', 'blockTable'],
  scalarKeys: [...COMMON_SCALARS, 'maxSeqlenQ', 'maxSeqlenK'],
  listKeys: COMMON_LISTS,
});

/** The params of a cached call without its tensors and per-call values: what every call of the signature shares. */
export interface ParamsSkeleton {
  readonly base: Omit<
    SdpaParams,
    'query' | 'key' | 'value' | 'mask' | 'alibiSlopes' | 'dropout' | 'descale' | 'sequsedK' | 'varlen' | 'paged' | 'out'
  >;
  readonly mask: Omit<MaskParams, 'tensor'> | null;
  readonly varlen: { readonly maxSeqlenQ: number; readonly maxSeqlenK: number } | null;
  readonly paged: Omit<PagedKvParams, 'blockTable' | 'table'> | null;
}

/** One backend on the cached selection path, in the order selection tries them. */
export interface PathStep {
  readonly backend: Backend;
  /** Every rule without readsValues passed for this signature. */
  readonly staticPass: boolean;
  /** Its rules with readsValues, run again on every call. */
  readonly valueRules: readonly Rule[];
}

/** Selection for one restriction (per-call backends or sdpaKernel scope, by names). */
export interface CachedSelection {
  readonly names: readonly string[] | null;
  readonly ctx: RuleContext;
  /** Candidates up to and including the one that ran when the entry was made. */
  readonly path: readonly PathStep[];
}

export interface CacheEntry {
  readonly state: RegistryState;
  readonly generation: number;
  readonly kind: CallKind;
  readonly layouts: readonly (Layout | null)[];
  readonly scalars: readonly unknown[];
  readonly lists: readonly unknown[];
  readonly capturing: boolean;
  readonly skeleton: ParamsSkeleton;
  /** The per-call backends option, as validation normalized it. */
  readonly backends: readonly string[] | null;
  selection: CachedSelection | null;
}

/** Entries kept: a few signatures alternate in real loops (layers of different shapes, prefill and decode). */
const MAX_ENTRIES = 16;
const entries: CacheEntry[] = [];

/** The call's tensors in the entry's order: q, k, v, then kind.tensorKeys. */
function matches(
  e: CacheEntry,
  kind: CallKind,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  opts: Record<string, unknown>,
  capturing: boolean,
): boolean {
  if (e.kind !== kind || e.capturing !== capturing) return false;
  const l = e.layouts;
  if (!matchesLayout(l[0]!, q) || !matchesLayout(l[1]!, k) || !matchesLayout(l[2]!, v)) return false;
  for (let i = 0; i < kind.tensorKeys.length; i++)
    if (!matchesLayout(l[i + 3]!, opts[kind.tensorKeys[i]!])) return false;
  for (let i = 0; i < kind.scalarKeys.length; i++)
    if (!Object.is(e.scalars[i], opts[kind.scalarKeys[i]!])) return false;
  for (let i = 0; i < kind.listKeys.length; i++) if (!sameList(e.lists[i], opts[kind.listKeys[i]!])) return false;
  return true;
}

/** The entry for this signature, most recently used first; null on a miss. */
export function findEntry(
  kind: CallKind,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  opts: Record<string, unknown>,
  capturing: boolean,
): CacheEntry | null {
  const state = registryState();
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (e.state !== state || e.generation !== state.generation) continue;
    if (!matches(e, kind, q, k, v, opts, capturing)) continue;
    if (i > 0) {
      entries.splice(i, 1);
      entries.unshift(e);
    }
    return e;
  }
  return null;
}

/** Whether a validated call may be cached: it carries no host copy of index values. */
export function cacheable(p: SdpaParams): boolean {
  if (p.kvCache) return false;
  if (p.varlen && (p.varlen.seqlensQ || p.varlen.seqlensK)) return false;
  if (p.sequsedK?.lengths || p.paged?.table) return false;
  return true;
}

/** Strips a validated call's params down to what every call of its signature shares. */
function skeletonOf(p: SdpaParams): ParamsSkeleton {
  const {
    query: _q,
    key: _k,
    value: _v,
    mask,
    alibiSlopes: _a,
    dropout: _d,
    descale: _ds,
    sequsedK: _s,
    varlen,
    paged,
    out: _o,
    ...base
  } = p;
  return {
    base,
    mask: mask && { kind: mask.kind, expandedStrides: mask.expandedStrides },
    varlen: varlen && { maxSeqlenQ: varlen.maxSeqlenQ, maxSeqlenK: varlen.maxSeqlenK },
    paged: paged && { blockSize: paged.blockSize, numBlocks: paged.numBlocks, maxBlocksPerSeq: paged.maxBlocksPerSeq },
  };
}

/** Remembers a validated, cacheable call (its tensors' layouts and raw options, not the tensors). */
export function addEntry(
  kind: CallKind,
  p: SdpaParams,
  opts: Record<string, unknown>,
  backends: readonly string[] | null,
): CacheEntry {
  const state = registryState();
  const entry: CacheEntry = {
    state,
    generation: state.generation,
    kind,
    layouts: [
      layoutOf(p.query),
      layoutOf(p.key),
      layoutOf(p.value),
      ...kind.tensorKeys.map((key) => layoutOf(opts[key])),
    ],
    scalars: kind.scalarKeys.map((key) => opts[key]),
    lists: kind.listKeys.map((key) => copyList(opts[key])),
    capturing: p.capturing,
    skeleton: skeletonOf(p),
    backends,
    selection: null,
  };
  entries.unshift(entry);
  if (entries.length > MAX_ENTRIES) entries.length = MAX_ENTRIES;
  return entry;
}

/** The tensors of one call of a cached signature (already checked live). */
export interface CallTensors {
  readonly query: Tensor;
  readonly key: Tensor;
  readonly value: Tensor;
  readonly mask: Tensor | null;
  readonly alibiSlopes: Tensor | null;
  readonly sequsedK: Tensor | null;
  readonly out: Tensor | null;
  readonly cuSeqlensQ: Tensor | null;
  readonly cuSeqlensK: Tensor | null;
  readonly blockTable: Tensor | null;
}

/**
 * The params of one call of a cached signature: the skeleton with this call's tensors, dropout and descale.
 * Fields are listed one by one, in validation's order: the object gets the same hidden class as a
 * validated call's params (an object spread of the skeleton made a dictionary-mode object and cost
 * more than the validation it replaced).
 */
export function assembleParams(
  s: ParamsSkeleton,
  t: CallTensors,
  dropout: DropoutParams | null,
  descale: Readonly<Descale> | null,
): SdpaParams {
  const b = s.base;
  const mask: MaskParams | null =
    s.mask && Object.freeze({ kind: s.mask.kind, tensor: t.mask!, expandedStrides: s.mask.expandedStrides });
  const varlen: VarlenParams | null =
    s.varlen &&
    Object.freeze({
      cuSeqlensQ: t.cuSeqlensQ!,
      cuSeqlensK: t.cuSeqlensK!,
      maxSeqlenQ: s.varlen.maxSeqlenQ,
      maxSeqlenK: s.varlen.maxSeqlenK,
      seqlensQ: null,
      seqlensK: null,
    });
  const paged: PagedKvParams | null =
    s.paged &&
    Object.freeze({
      blockTable: t.blockTable!,
      blockSize: s.paged.blockSize,
      numBlocks: s.paged.numBlocks,
      maxBlocksPerSeq: s.paged.maxBlocksPerSeq,
      table: null,
    });
  const params: SdpaParams = {
    query: t.query,
    key: t.key,
    value: t.value,
    device: b.device,
    dtype: b.dtype,
    descale,
    batch: b.batch,
    headsQ: b.headsQ,
    headsKV: b.headsKV,
    seqQ: b.seqQ,
    seqK: b.seqK,
    headDim: b.headDim,
    headDimV: b.headDimV,
    scale: b.scale,
    causal: b.causal,
    alignment: b.alignment,
    window: b.window,
    mask,
    alibiSlopes: t.alibiSlopes,
    softcap: b.softcap,
    dropout,
    enableGqa: b.enableGqa,
    varlen,
    sequsedK: t.sequsedK && Object.freeze({ tensor: t.sequsedK, lengths: null }),
    paged,
    kvCache: null,
    requiresGrad: b.requiresGrad,
    deterministic: b.deterministic,
    kernel: b.kernel,
    capturing: b.capturing,
    indexValuesOnDevice: b.indexValuesOnDevice,
    out: t.out,
  };
  return Object.freeze(params);
}

/** Forgets every entry (tests). */
export function clearCallCache(): void {
  entries.length = 0;
}

/** Entries held (tests). */
export function callCacheSize(): number {
  return entries.length;
}
