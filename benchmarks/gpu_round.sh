#!/bin/bash
# Issue 43's GPU checks as one command for a lent GPU machine (docs/results/gpu-speed.md): the gpu-marked
# tests, then the benchmarks, each under what is left of one deadline, everything logged to $OUT (or ./gpu-out).
#
#   bash benchmarks/gpu_round.sh [SECONDS]     # default 540
#   STEPS="clm mlm" TASK_ROWS="inference generate" PREPARE_MB=26 bash benchmarks/gpu_round.sh 330
#
# The machine has its own python3 with PyTorch (CUDA), transformers and tokenizers and no network: warmstart
# runs from src/ and the data packages it reads come as folders under .gpu/data (namespace packages holding
# only the files warmstart opens; MiniLM's weights stored in fp16 to fit the 64 MiB a call carries).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
LOG=$OUT/gpu_round.log
DEADLINE=$((SECONDS + ${1:-540}))
export PYTHONPATH=$PWD/src:$PWD/.gpu/data PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
PY=${PY:-python3}

STEPS=" ${STEPS:-tests mlm clm tasks prepare} "

step() {  # step NAME CAP_SECONDS COMMAND...: runs COMMAND for at most CAP seconds or what is left
    local name=$1 cap=$2 left=$((DEADLINE - SECONDS))
    shift 2
    [[ "$STEPS" == *" ${name%%-*} "* ]] || return 0
    [ "$left" -lt "$cap" ] && cap=$left
    if [ "$cap" -lt 20 ]; then
        echo "=== $name: skipped, $left s left" | tee -a "$LOG"
        return
    fi
    echo "=== $name (at most $cap s) $(date -u +%T)" | tee -a "$LOG"
    local start=$SECONDS
    timeout "$cap" "$@" 2>&1 | tee -a "$LOG"
    echo "=== $name: exit ${PIPESTATUS[0]} in $((SECONDS - start)) s" | tee -a "$LOG"
}

{
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
    $PY -c "import torch, transformers, tokenizers, warmstart; print('torch', torch.__version__,
'cuda', torch.version.cuda, 'transformers', transformers.__version__, 'tokenizers', tokenizers.__version__,
'warmstart', warmstart.__file__); print('cpus', __import__('os').cpu_count())"
    git log -1 --format='commit %h %s' 2>/dev/null || true
} 2>&1 | tee "$LOG"

step tests 170 $PY -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/train/test_compile.py \
    tests/api/test_model_methods.py -rs
step mlm-bert-base 150 $PY benchmarks/mlm_throughput.py --device cuda --preset bert-base --precision bf16 \
    --batch 256 --trials 2 --steps 10 --warmup 6 --spec-tflops 989 --compile --profile
cd benchmarks
step clm-gpt2-1024 130 $PY throughput.py --device cuda --rows clm-gpt2-1024 --trials 2 --steps 8 --warmup 4 \
    --compile --spec-tflops 989
step tasks 80 $PY throughput.py --device cuda --rows ${TASK_ROWS:-finetune inference generate} --trials 3 \
    --steps 20 --warmup 5
cd ..
step prepare 70 $PY benchmarks/prepare_rate.py --size-mb "${PREPARE_MB:-52}" --repeat 1 --torchrun "$(nproc)"
echo "=== done in $SECONDS s" | tee -a "$LOG"
