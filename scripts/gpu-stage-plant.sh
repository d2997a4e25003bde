#!/usr/bin/env bash
# Stages a planted-bug binary beside the real one, for a device call that proves a check can fail: applies
# scripts/plants/NAME.patch to the tree, builds llm170 in the given build folder, stages it (stripped) as
# .devstage/plant-NAME/llm170 and re-packs .devbin/bundle.tar.xz (scripts/gpu-bundle.sh), then reverts the
# patch and rebuilds (only the patched files recompile). Run
# after scripts/gpu-stage.sh (which empties .devbin/), once per plant. scripts/gpu-e2e.sh runs every
# planted binary staged there through the engine check and expects it to FAIL.
#   scripts/gpu-stage-plant.sh [build-cuda] [cudagraph-stale-upload | cuda-stale-q8-record | gemv-t-dependent |
#                                            attn-batch-splits | gemv-mma-order | gdn-q8-record |
#                                            gdn-conv-first-reader | moe-tail-res | gemv-stream-ulp |
#                                            moe-combine-blocks | matmul-f-token | gemv-experts-row |
#                                            gemv-lean-role | gemv-pipe-role | matmul-f-group |
#                                            gemv-bias-member | gemv-early-chunk |
#                                            wgmma-k-order | mmq-slot-scale | bf16-stale-record |
#                                            norm-bf16-unwritten | gated-norm-bf16-unwritten |
#                                            mmq-dense-tile]
# Staged binaries share one xz bundle, where a plant adds little to the real binary's ~6.3 MB (a build with
# -DLLM170_CUDA_ARCHS=90a-real), so several plants fit in a call beside it (the 64 MiB cap, gpu-bundle.sh).
# cudagraph-stale-upload: a captured pass's upload skips the copy into the staging buffer once an exec
# exists, so every graph after the first replays the first pass's token ids and positions: the engine
# check's "graph = nograph bit for bit" comparison must fail from the second greedy step on.
# cuda-stale-q8-record: ops no longer drop the executor's record of which rows xq holds, so a projection
# whose input buffer was rewritten since it was last quantized (the o projection of the next layer) reuses
# stale q8_1 rows: the GPU's logits leave the CPU's bound (both graph and :nograph are wrong alike).
# gemv-t-dependent: the old warps-per-row rule (one warp per row at T = 5..8 for 4096 <= K < 16384), so a
# row's GEMV bits depend on T: cuda-check's one-row comparison must fail on the cases that
# scripts/plants/NAME.filter names (copied beside the binary; gpu-e2e.sh runs cuda-check --filter with it).
# attn-batch-splits: attend_decode's kernels split every sequence of a batched decode step as the longest
# one needs, so a sequence's bits depend on what shares its step: the conformance suite's "each of the 4
# seqs alone = in the batch" rows must fail.
# scripts/plants/NAME.env, when there, holds VAR=value words the plant's steps run under (a plant in an
# experiment's kernel needs the variable that selects it).
# pdl-no-wait: k_quantize_q8_1 (the q8_1 quantize and the fused rms_norm / swiglu forms) without pdl_enter(),
# so on sm_90 it reads its input while the kernel before it may still be writing it: the engine check must fail.
# gemv-mma-order: k_gemv_mma visits its leaves in lane order instead of bit-reversed, a tree other than the
# butterfly of the one-row kernel: cuda-check's "(batched)" cases must fail on their 1-row comparison
# (under LLM170_CUDA_GEMV_BATCH=mma, its .env).
# gdn-q8-record: k_gdn_step writes o's q8_1 units from o x 1.001: the conformance suite's "a matmul of o =
# of its copy" row and cuda-check's gdn_step cases (q8_1 off) must fail.
# gdn-conv-first-reader: the first reader of a key head's q / k conv channels to finish shifts them, while
# others may still read them: cuda-check's 5-sequence gdn_step case must fail (conv values off).
# moe-tail-res: cuda_moe_combine_gated's residual add is off by 1e-3: the conformance suite's "then
# add_gated_rows and add: the residual" row and cuda-check's pairs case must fail.
# moe-combine-blocks: each block of k_moe_combine stops one channel short of its share: the conformance
# suite's "2 one-token rows of 1100" rows must fail (the older rows, C <= 19, are one block and cannot).
# matmul-f-token: the one-token matmul_f sums its unrolled iterations in reverse: the conformance suite's
# "K = 2088, each token alone = in the pass of 3" rows must fail (other bits than the 8-token kernel).
# gemv-experts-row: the routed experts' GEMV reads the neighbouring expert's rows (e ^ 1): cuda-check's
# gemv_experts cases must fail on their bit-for-bit comparison with the plain GEMV.
# gemv-lean-role: k_gemv_lean (the default T = 1 GEMV) adds a row's 4 roles in reverse order, not k_gemv_q's
# order of its warps: cuda-check's forms comparison must fail on the K >= 4096 cases its filter names.
# (It plants into lean_finish, which k_gemv_pipe shares.) gemv-pipe-role: k_gemv_pipe gives step k to role
# 3 - k % 4, not k % 4: the same cases must fail on the forms comparison.
# matmul-f-group: the second matrix of a grouped float matmul (an MoE's router + shared gate) computes its rows
# from the launch's first block, so its blocks leave every row unwritten: the conformance suite's "N 37 then N 1
# over one input" rows and the engine check's MoE models must fail.
# gemv-bias-member: every member of a grouped GEMV adds member 0's output bias (cuda_qmat.bias): cuda-check's gemv
# cases (their "bias" comparisons, members 1 and 2) and the conformance suite's add_bias-after-matmuls rows must fail.
# gemv-early-chunk: k_gemv_lean (the default below K 4096 or 24 Mi weights) goes on after its early first chunk
# from step CH - 1, not CH, so a lane with at least CH steps adds its step CH - 1 twice: cuda-check's forms
# comparison must fail on the cases its filter names (K 4096 and 5120: every lane has >= 4 steps). Written
# 2026-12-07 after the early forms' device call; failed both cases on an H100 (2026-12-07 16:10).
# wgmma-k-order: gemm_wgmma's consumers pair the X tile's k16 steps 0 <-> 1 and 2 <-> 3 with W's 0, 1, 2, 3 (the
# A descriptor's K advance wrong): cuda-check's gemm_wgmma cases its filter names must fail (on an sm_90a device).
# mmq-slot-scale: the int8 expert GEMM (kernels/mmq.cu) scales the second slot of each lane's pair with the first
# slot's q8_1 unit scale: cuda-check's mmq_experts cases must fail (host-model bits and the bound) and so must the
# conformance suite's matmul_experts rows and the engine check's MoE models. Seen failing all three on an H100
# (2026-12-07 19:00, then behind the variable that selected the kernel: 7 of 7 mmq cases, the conformance rows
# at 30-36x their bound, the MoE models' logits).
# bf16-stale-record: ops no longer drop the executor's record of which rows xb holds (a GEMM's bf16 input), so a
# GEMM run over rows an op rewrote since they were converted reuses the stale bf16: the conformance suite's
# "256 x 256 over 19 rows, one pass: over x after an add into it" rows must fail for the GEMM's types (Q4_0, Q4_1,
# Q5_0, Q8_0, Q4_K, Q5_K, Q6_K). The engine check passes: no model's layer rewrites a projection's input
# between two GEMM runs over it (as with cuda-stale-q8-record, docs/cuda.md). Seen failing those rows (74-84x
# their bound) and passing the engine check on an H100 (2026-12-07 23:20).
# norm-bf16-unwritten: the rms_norm before a prompt's GEMM keeps the record that xb holds its output's bf16 but
# writes none (the plain kernel), so the q / k / v and gate / up GEMMs read the bf16 of whatever the GEMM before
# converted: the engine check's 100-token prompts must fail (every arch), and cuda-check's rms_norm_bf16 cases pass
# (the kernel is right). Seen failing 8 engine-check rows (every arch's 100-token prompt) on an H100 (2026-12-07
# 23:20); its conformance suite passed (no case runs a norm before a GEMM).
# gated-norm-bf16-unwritten: a GDN layer's gated_norm in a prompt keeps the record that xb holds o's bf16 but
# writes none, so ssm_out's GEMM reads the bf16 the GEMM before converted: the engine check's 100-token prompts of
# the qwen35 / qwen35moe models must fail. Seen failing 4 rows on an H100 (2026-12-08 01:35; conformance passed).
# mmq-dense-tile: the dense int8 product (a batched decode step's rows) forgets its tile's first row, so every
# tile after the first recomputes the first tile's rows: cuda-check's mmq_dense cases of two tiles (40 and 100
# rows), the conformance suite's one-token sequences and the engine check's batch must fail (seen failing on an
# H100, 2026-12-08, with 40 of each and the product from 9 rows: 3 cases, the conformance suite's Q4_0 row at
# 85x its bound, 16 engine rows at 0.5 of the logit range; the sizes are 72 since the threshold is 64).
set -eu
build=${1:-build-cuda}
name=${2:-cudagraph-stale-upload}
patch=scripts/plants/$name.patch
git apply "$patch"
trap 'git apply -R "$patch" && nice cmake --build "$build" -j2 --target llm170 > /dev/null' EXIT
nice cmake --build "$build" -j2 --target llm170
mkdir -p ".devbin/plant-$name" ".devstage/plant-$name"
cp "$build/llm170" ".devstage/plant-$name/llm170"
strip ".devstage/plant-$name/llm170"
[ -f "scripts/plants/$name.filter" ] && cp "scripts/plants/$name.filter" ".devbin/plant-$name/filter"
[ -f "scripts/plants/$name.env" ] && cp "scripts/plants/$name.env" ".devbin/plant-$name/env"
scripts/gpu-bundle.sh
