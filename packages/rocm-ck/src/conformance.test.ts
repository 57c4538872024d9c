// The conformance suite on AMD hardware: 'ck-flash' and 'ck-efficient' against cpu-math. It starts
// only where the CK addon loads (built with CK_INCLUDE_DIR / CK_FMHA_DIR), the 'rocm' runtime sees a
// GPU and CK can be made the preferred ROCm library (every visible GPU in CK's arch list); elsewhere
// it is skipped with the reason printed (a skip is not a pass). With ATTN_REQUIRE_ROCM=1 (the
// documented AMD-host command) the reason is a failure instead of a skip.
// Run on an AMD host: see README "Conformance on AMD hardware".
import '@attn/cpu';
import { describeConformanceWhereRunnable } from '@attn/conformance';
import { preferredRocmFaLibrary } from '@attn/rocm';
import { ckFlash } from './index.js';

/** Why the suite cannot run here, or null when it can. */
function blocker(): string | null {
  const av = ckFlash.availability();
  if (!av.ok) return av.reason;
  try {
    // The CK backends run only when CK is the preferred library (as PyTorch's preferred_rocm_fa_library).
    preferredRocmFaLibrary('ck');
  } catch (e) {
    return `cannot select CK as the ROCm attention library: ${e instanceof Error ? e.message : String(e)}`;
  }
  return null;
}

describeConformanceWhereRunnable(['ck-flash', 'ck-efficient'], {
  reason: blocker(),
  requireEnv: 'ATTN_REQUIRE_ROCM',
  needs: 'a ROCm device and a CK build of this addon',
  quick: true,
});
