#!/usr/bin/env bash
# perf_mxfp4's bad input: each a one-line error naming the flag, exit status 2, before any GPU
# work (so the test runs with or without a GPU).
set -euo pipefail
perf=${1:?usage: perf_mxfp4_cli_test.sh PERF_MXFP4}
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_usage_error() {  # expected-substring args...
  local want=$1
  shift
  local err rc=0
  err=$("$perf" "$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" -eq 2 ] || fail "perf_mxfp4 $*: exit $rc, expected 2 (stderr: $err)"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "perf_mxfp4 $*: more than one line: $err"
  case "$err" in *"$want"*) ;; *) fail "perf_mxfp4 $*: '$err' does not say '$want'" ;; esac
}
expect_usage_error "--op=foo: expected a comma-separated list of mxfp4_gemm, mxfp4_moe, bf16_gemm, bf16_moe, hbm_read" --op=foo
expect_usage_error "--op=: expected" --op=
expect_usage_error "--op=mxfp4_gemm,: expected" --op=mxfp4_gemm,
expect_usage_error "--config=DECODE=x: expected comma-separated NAME or NAME=integer items" --config=DECODE=x
expect_usage_error "--config=: expected" --config=
expect_usage_error "--config==1: expected" --config==1
expect_usage_error "--config=WARPS_K=4: --config given twice" --config=DECODE=1 --config=WARPS_K=4
expect_usage_error "--m=0: expected a comma-separated list of positive token counts M" --m=0
expect_usage_error "--timing=wall: expected kernel, cudagraph or event" --timing=wall
expect_usage_error "unknown flag --each=1" --each=1
expect_usage_error "--resources: --op=bf16_gemm: expected mxfp4_gemm or mxfp4_moe" --resources --op=bf16_gemm
# A --config that no config of the selected ops holds, in the space asked for, names the space.
expect_usage_error "--config=WGMMA=2: no config of mxfp4_moe in the default space (--expanded" --resources --op=mxfp4_moe --config=WGMMA=2
expect_usage_error "--config=MMA_N=96: no config of mxfp4_gemm, mxfp4_moe, bf16_gemm in the expanded space" --expanded --config=MMA_N=96
expect_usage_error "--config=MMA_N=256: no config of mxfp4_moe in the default space" --op=mxfp4_moe --config=MMA_N=256
expect_usage_error "--resources: --op=bf16_gemm: expected mxfp4_gemm or mxfp4_moe" --resources --op=bf16_gemm --config=ALGO=1
FLAGGEMS_MXFP4_FOLDSCALE=2 expect_usage_error "FLAGGEMS_MXFP4_FOLDSCALE='2': expected 0 or 1" --resources
# --resources needs no GPU: ptxas's registers for the selected configs, from NVRTC.
res=$("$perf" --resources --op=mxfp4_gemm --config=DECODE=1,BLOCK_M=8,WARPS_K=16,UNROLL=4,STAGES=0,SCALE_VOTE=1) \
  || fail "perf_mxfp4 --resources exited $?"
line=$(printf '%s\n' "$res" | grep '^mxfp4_gemm .* mxfp4_decode ' | head -1)
[ -n "$line" ] || fail "perf_mxfp4 --resources printed no mxfp4_decode line: $res"
regs=$(echo "$line" | awk '{print $4}')
[ "$regs" -gt 0 ] && [ "$regs" -le 255 ] || fail "perf_mxfp4 --resources: registers '$regs' in: $line"
[ "$(echo "$line" | awk '{print $10}')" = 512 ] || fail "perf_mxfp4 --resources: 16 warps are not 512 threads: $line"
# A wgmma config: its launch's dynamic shared memory (pipeline stages, row indices) is listed.
line=$("$perf" --resources --op=mxfp4_moe --config=WGMMA=1,BLOCK_N=256,MMA_OVERLAP=1 | grep ' mxfp4_wgmma ' | head -1)
[ -n "$line" ] || fail "perf_mxfp4 --resources printed no mxfp4_wgmma line"
[ "$(echo "$line" | awk '{print $9}')" -gt 100000 ] || fail "perf_mxfp4 --resources: no dynamic shared memory in: $line"
# "serialized": ptxas waits for each wgmma of a 256 x 128 tile with one m64n256k16 a k16 step,
# not with two m64n128k16.
res=$("$perf" --resources --expanded --op=mxfp4_gemm --config=WGMMA_WS=1,BLOCK_M=256,BLOCK_K=128,TMA=1)
one=$(printf '%s\n' "$res" | grep ' mxfp4_wgmma_ws .*MMA_N=256,' | head -1)
two=$(printf '%s\n' "$res" | grep ' mxfp4_wgmma_ws .*MMA_N=128,' | head -1)
[ "$(echo "$one" | awk '{print $12}')" = wgmma ] || fail "perf_mxfp4 --resources: MMA_N 256 not shown serialized: $one"
[ "$(echo "$two" | awk '{print $12}')" = - ] || fail "perf_mxfp4 --resources: MMA_N 128 shown serialized: $two"
# --help: the usage on stdout, exit 0, before any GPU is looked for.
help=$("$perf" --help) || fail "perf_mxfp4 --help exited $?"
case "$help" in "usage: perf_mxfp4 "*"--op"*) ;; *) fail "perf_mxfp4 --help printed: $help" ;; esac
echo "perf_mxfp4 cli: ok"
