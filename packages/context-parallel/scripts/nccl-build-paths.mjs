// Prints what the native build links: findNccl's build-time answer (the one search, src/nccl/find.ts),
// as CMake-readable lines: INCLUDE=..., LIBRARY=..., VERSION=..., or NONE=<why>. Run by CMakeLists.txt
// after the TypeScript build (dist/).
import { findNccl } from '../dist/index.js';

const r = findNccl();
if (r.build) {
  console.log(`INCLUDE=${r.build.includeDir}`);
  console.log(`LIBRARY=${r.build.library}`);
  console.log(`VERSION=${r.build.version ?? 'unknown'}`);
} else {
  console.log(`NONE=${r.summary}`);
}
