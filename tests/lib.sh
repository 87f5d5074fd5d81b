# The shell tests' shared start, sourced after the script's own `set` options and arguments:
#   here, tiny: the tests folder and its small CPU shape set (data/dsv4f_decode_tiny.yaml);
#   work: a scratch folder, removed on exit (read-only files in it included);
#   TMPDIR: $work/tmp, the test's own, so that the sweeps' scratch folders (and a killed run's,
#   which a later run cleans up) are never another test's;
#   fail MESSAGE: the test fails with MESSAGE on stderr (exit 1);
#   none of tunebench's settings from the caller's environment (each test sets what it
#   exercises), and the kernel cache, the config cache and run directories inside $work.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tiny=$here/data/dsv4f_decode_tiny.yaml
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export TMPDIR=$work/tmp
mkdir "$TMPDIR"
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck disable=SC2046  # one word per variable name
unset $(env | grep -o '^TUNEBENCH_[A-Z0-9_]*') USE_FLAGTUNE PARALLEL_WARMUP_GPUS REPLAY_FROM FLAGGEMS_MXFP4_FOLDSCALE
export TUNEBENCH_KERNEL_CACHE=$work/kernels TUNEBENCH_RUNS=$work/runs TUNEBENCH_CACHE=$work/cache.sqlite
