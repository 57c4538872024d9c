// The conformance suite on AMD hardware: 'aotriton-flash' and 'aotriton-efficient' against cpu-math.
// It starts only where the AOTriton addon loads (built against an AOTriton install) and the 'rocm'
// runtime sees a GPU; elsewhere it is skipped with the reason printed (a skip is not a pass). With
// ATTN_REQUIRE_ROCM=1 (the documented AMD-host command) the reason is a failure instead of a skip.
// Run on an AMD host: see README "Conformance on AMD hardware".
import '@attn/cpu';
import { describeConformanceWhereRunnable } from '@attn/conformance';
import { preferredRocmFaLibrary } from '@attn/rocm';
import { aotritonFlash } from './index.js';

/** Why the suite cannot run here, or null when it can (AOTriton loads, a ROCm GPU is visible). */
function blocker(): string | null {
  const av = aotritonFlash.availability();
  if (!av.ok) return av.reason;
  try {
    // The AOTriton backends decline while CK is the preferred library (preferredRocmFaLibrary('ck')).
    preferredRocmFaLibrary('aotriton');
  } catch (e) {
    return `cannot select AOTriton as the ROCm attention library: ${e instanceof Error ? e.message : String(e)}`;
  }
  return null;
}

describeConformanceWhereRunnable(['aotriton-flash', 'aotriton-efficient'], {
  reason: blocker(),
  requireEnv: 'ATTN_REQUIRE_ROCM',
  needs: 'a ROCm device and an AOTriton build of this addon',
  quick: true,
});
