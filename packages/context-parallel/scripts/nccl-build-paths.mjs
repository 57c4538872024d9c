// Prints what the native build links: findNccl's build-time answer (the one search, src/nccl/find.ts),
// as CMake-readable lines: INCLUDE=..., LIBRARY=..., VERSION=..., SOURCE=..., or NONE=<why>. Run by
// CMakeLists.txt after the TypeScript build (dist/). When the machine has no NCCL, it fetches the
// nvidia-nccl-cu13 wheel through pip into the package's build/nccl-wheel and searches again; the addon
// then links that copy and finds it at run time through its RPATH.
import { fetchNcclWheel, findNccl, systemProbe } from '../dist/index.js';

let r = findNccl();
let fetchError = null;
if (!r.build && systemProbe.fetchedWheel) {
  try {
    fetchNcclWheel(systemProbe.fetchedWheel);
    r = findNccl();
  } catch (e) {
    fetchError = e instanceof Error ? e.message : String(e);
  }
}
if (r.build) {
  console.log(`INCLUDE=${r.build.includeDir}`);
  console.log(`LIBRARY=${r.build.library}`);
  console.log(`VERSION=${r.build.version ?? 'unknown'}`);
  console.log(`SOURCE=${r.build.source}`);
} else {
  console.log(`NONE=${r.summary}${fetchError ? `; fetching the wheel failed: ${fetchError}` : ''}`);
}
