#!/usr/bin/env bash
# Soak run: N shards through three real worker processes (real Redis, moto S3 server behind a
# fault proxy) while kill -9, Redis wipes and S3 failures are injected for M minutes.
# Prints lost / duplicated / dead-lettered counts; exits non-zero if anything was lost or doubled.
#
#   bench/soak.sh [N_SHARDS=24] [MINUTES=3] [PIPELINE=dummy|real]
#   SEED=2 SOAK_HTML=soak.html bench/soak.sh ...   # another fault sequence; the run report
#
# PIPELINE=real runs services.asr (bundled:whisper-base) + services.enhance (ONSEI_ENHANCE_BACKEND=none).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-24}"
M="${2:-3}"
P="${3:-dummy}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" HF_HUB_OFFLINE=1
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-testing}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-testing}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
exec python -m tests.reliability.soak --shards "$N" --minutes "$M" --pipeline "$P" \
  --seed "${SEED:-1}" ${SOAK_HTML:+--html "$SOAK_HTML"}
