// The fp8 forward's one instantiation (head-dim bucket 128, a ring of kFp8Stages stages; dispatch.cu).
#include "sm90/flash_fwd_sm90_fp8_launch.h"
#include "sm90/fwd_sm90_fp8_config.h"

template void attn::flash::run_fwd_sm90_fp8<attn::flash::Fp8FwdTile>(const attn::flash::FwdParams&, cudaStream_t, int);
