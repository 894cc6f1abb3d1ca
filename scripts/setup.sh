#!/usr/bin/env bash
# Installs the Debian packages tpusim needs to build, test and run.
# Idempotent: packages already installed are skipped; apt-get update runs at
# most once, and only when something is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config ninja-build
  libsystemc-dev          # SystemC 2.3.4 (pkg-config: systemc)
  libyaml-cpp-dev         # chip/system/sweep YAML
  libfmt-dev              # formatting
  libboost-dev            # header-only Boost components
  libcli11-dev            # command line parsing
  nlohmann-json3-dev      # JSON reports, stats, traces
  libgtest-dev libgmock-dev
  libbenchmark-dev
  clang libclang-rt-14-dev  # libFuzzer targets (tests/fuzz)
  libopenmpi-dev openmpi-bin   # MPI sweep launcher (mpirun -np N tpusim sweep …)
  python3 python3-matplotlib python3-numpy  # scripts/plot_sweep.py
  python3-pandas          # scripts/profile_pandas.py (reading the op rows with pandas)
  time                    # peak RSS per run in scripts/run_corpus.py (GNU time -f %M)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get update -qq; then
  echo "setup: 'apt-get update' failed; check the network / apt sources" >&2; exit 1
fi
if ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  echo "setup: could not install: ${missing[*]}" >&2
  echo "setup: tpusim needs Debian 12 (bookworm) or newer with these packages" >&2
  exit 1
fi
echo "setup: done"
