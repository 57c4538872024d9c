// Rules about the device, dtypes and memory (check_all_tensors_on_device, check_*_hardware_support,
// check_tensor_dtype / check_dtypes_low_precision, check_data_ptr_alignment_mem_efficient,
// check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120).
import type { Rule } from './backend.js';
import type { DeviceType } from './device.js';
import { deviceToString } from './device-parse.js';
import type { FloatDType } from './dtype.js';
import { type PerDType, perDType, perDTypeLabel, rule, smLabel, smOf } from './rule.js';
import type { Tensor } from './tensor.js';

/** Every tensor on a device of this type (check_all_tensors_on_device). */
export function tensorsOn(type: DeviceType): Rule {
  return rule(`tensorsOn(${type})`, (p) => {
    if (p.device.type === type) return null;
    const at = (t: Tensor): string => deviceToString(t.device);
    return `All tensors need to be on ${type} device. Got query on device: ${at(p.query)}, key on device: ${at(p.key)}, value on device: ${at(p.value)}. Move them with .to('${type}').`;
  });
}

/** CUDA compute capability in [lo, hi], written as 80 for sm_80 (check_*_hardware_support). */
export function smRange(lo: number, hi: number): Rule {
  return rule(`smRange(${lo}, ${hi})`, (p, ctx) => {
    const sm = smOf(ctx);
    if (sm !== null && sm >= lo && sm <= hi) return null;
    return `Only supports gpu architectures in the range [sm${lo}, sm${hi}]. Attempting to run on ${smLabel(ctx)}.`;
  });
}

/** ROCm arch (gcnArchName without feature flags, e.g. 'gfx942') in the list. */
export function archIn(archs: readonly string[]): Rule {
  return rule(`archIn(${archs.join(', ')})`, (p, ctx) => {
    const arch = ctx.device?.arch.split(':')[0];
    if (arch !== undefined && archs.includes(arch)) return null;
    return `Was not built for this GPU architecture: supports ${archs.join(', ')}; attempting to run on ${smLabel(ctx)}.`;
  });
}

/** Query dtype in the list (check_tensor_dtype; q, k, v share one dtype after validation). */
export function dtypeIn(dtypes: readonly FloatDType[]): Rule {
  return rule(`dtypeIn(${dtypes.join(', ')})`, (p) => {
    if (dtypes.includes(p.dtype)) return null;
    return `Expected query, key and value to all be of dtype: {${dtypes.join(', ')}}. Got ${p.dtype}. Convert with .toDType('${dtypes[0]}') or choose another backend.`;
  });
}

/** One row of dtypeInByArch: from this compute capability up, these dtypes. */
export interface DtypesFromSm {
  readonly minSm: number;
  readonly dtypes: readonly FloatDType[];
}

/**
 * The dtype list that depends on the GPU (check_dtypes_low_precision: sm80+ {fp16, bf16}, else
 * {fp16}). The row with the highest minSm <= the device's sm applies.
 */
export function dtypeInByArch(table: readonly DtypesFromSm[]): Rule {
  const rows = [...table].sort((a, b) => b.minSm - a.minSm);
  const label = rows.map((r) => `sm${r.minSm}+: ${r.dtypes.join('/')}`).join('; ');
  return rule(`dtypeInByArch(${label})`, (p, ctx) => {
    const sm = smOf(ctx);
    const row = sm === null ? undefined : rows.find((r) => sm >= r.minSm);
    if (!row) return `Cannot tell which dtypes ${smLabel(ctx)} supports (${label}).`;
    if (row.dtypes.includes(p.dtype)) return null;
    return `Expected query, key and value to all be of dtype: {${row.dtypes.join(', ')}} on ${smLabel(ctx)}. Got ${p.dtype}. Convert with .toDType('${row.dtypes[0]}').`;
  });
}

/** Byte address of a tensor's first element modulo `bytes` (host: within its ArrayBuffer). */
function misalignment(t: Tensor, bytes: number): number {
  const byteOffset = t.offset * t.itemBytes;
  if (t.isHost) return (((t.hostData().byteOffset + byteOffset) % bytes) + bytes) % bytes;
  return Number(((t.dataPointer() % BigInt(bytes)) + BigInt(bytes)) % BigInt(bytes));
}

/** q, k, v start addresses aligned to `bytes` (check_data_ptr_alignment_mem_efficient). Empty tensors pass. */
export function storageAligned(bytes: PerDType): Rule {
  return rule(
    `storageAligned(${perDTypeLabel(bytes)})`,
    (p) => {
      const n = perDType(bytes, p.dtype);
      const bad = (['query', 'key', 'value'] as const).filter(
        (name) => p[name].numel > 0 && misalignment(p[name], n) !== 0,
      );
      if (bad.length === 0) return null;
      return `Requires q, k, and v storage offsets * element_size to be aligned to ${n} bytes; ${bad.join(', ')} ${bad.length > 1 ? 'are' : 'is'} not. Call .contiguous() on them.`;
    },
    { readsValues: true },
  );
}

/**
 * Training restriction of flash on sm86-89 and sm120-121 (shared memory): with requiresGrad,
 * head dims in (192, 224] are refused, and (224, 256] too when dropout is on.
 */
export const backwardHeadDimOnSm86_89: Rule = rule('backwardHeadDimOnSm86_89', (p, ctx) => {
  const sm = smOf(ctx);
  if (!p.requiresGrad || sm === null || !((sm >= 86 && sm <= 89) || (sm >= 120 && sm <= 121))) return null;
  const d = Math.max(p.headDim, p.headDimV);
  const dropout = p.dropout?.p ?? 0;
  if (d <= 192 || (dropout === 0 && d > 224)) return null;
  return (
    "Flash attention currently doesn't support training with head_dim in (192, 224] or (head_dim in (224, 256] and dropout > 0.0) " +
    `on gpu architectures in the range [sm86, sm89] or [sm120, sm121]. Attempting to run with dropout ${dropout} and head_dim ${d} on ${smLabel(ctx)}.`
  );
});
