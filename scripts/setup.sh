#!/usr/bin/env bash
# Installs what tunebench needs to build and test, from Debian's packages; the CUDA 13 toolkit
# is expected at /usr/local/cuda (or CUDAToolkit_ROOT). Idempotent: prints nothing when all is
# present. Exits non-zero with one line naming what is missing when it cannot install.
set -euo pipefail

packages=(cmake g++ make libbenchmark-dev libgtest-dev libsqlite3-dev libyaml-cpp-dev
          nlohmann-json3-dev libbenchmark-tools python3-scipy python3-matplotlib git locales
          libopenmpi-dev openmpi-bin clang-format)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      echo "setup: cannot install ${missing[*]}: not root and no password-less sudo; install them with apt-get and rerun" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/tmp/tunebench-setup.log 2>&1; then
    echo "setup: apt-get could not install ${missing[*]} (log: /tmp/tunebench-setup.log)" >&2
    exit 1
  fi
fi

cuda_root=${CUDAToolkit_ROOT:-/usr/local/cuda}
if [[ ! -x $cuda_root/bin/nvcc && ! -f $cuda_root/include/cuda_runtime.h ]]; then
  echo "setup: no CUDA toolkit at $cuda_root (expected CUDA 13.0 with CUPTI and NVRTC); set CUDAToolkit_ROOT" >&2
  exit 1
fi
