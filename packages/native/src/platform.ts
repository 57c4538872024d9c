// The platform tag of prebuilt binary packages: `<os>-<arch>[-<libc>]`, as napi-rs and sharp name
// theirs (`@attn/cpu-linux-x64-gnu`). A binary built against glibc does not load under musl and the
// other way round, so on Linux the C library is part of the tag.

export type Libc = 'gnu' | 'musl';

interface ReportHeader {
  readonly glibcVersionRuntime?: string;
}

/** 'gnu' when the running Node is linked against glibc, else 'musl' (Linux only). */
export function detectLibc(report: () => unknown = () => process.report?.getReport()): Libc {
  try {
    const header = (report() as { header?: ReportHeader } | undefined)?.header;
    return header?.glibcVersionRuntime ? 'gnu' : 'musl';
  } catch {
    return 'gnu';
  }
}

/** E.g. 'linux-x64-gnu', 'linux-arm64-musl', 'darwin-arm64', 'win32-x64'. */
export function platformTag(
  platform: NodeJS.Platform = process.platform,
  arch: string = process.arch,
  libc?: Libc,
): string {
  if (platform !== 'linux') return `${platform}-${arch}`;
  return `${platform}-${arch}-${libc ?? detectLibc()}`;
}

/** The prebuilt package of `packageName` for a platform: '@attn/cpu' -> '@attn/cpu-linux-x64-gnu'. */
export function prebuiltPackageName(packageName: string, tag: string = platformTag()): string {
  return `${packageName}-${tag}`;
}
