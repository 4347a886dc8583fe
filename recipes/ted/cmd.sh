# cmd.sh: how this recipe runs its jobs, sourced by run.sh (`. ./cmd.sh`).
# Every recipe has its own copy: copy this file into a new recipe unchanged.
#
# cmd_backend chooses where `$train_cmd`, `$decode_cmd` and `$cuda_cmd` run:
#   local  on this machine, as parallel processes (utils/run.sh)
#   slurm  as sbatch job arrays (utils/slurm.sh); options -> flags in conf/slurm.conf
#   sge    as qsub job arrays, Grid Engine (utils/queue.sh); options -> flags in conf/queue.conf
# Set it here, or for one run: `cmd_backend=slurm ./run.sh`.
#
# A stage calls them the Kaldi way, e.g.
#   $decode_cmd JOB=1:$nj exp/x/log/decode.JOB.log punctkit decode ... data/test/split$nj/JOB ...
#   $cuda_cmd --gpu $ngpu exp/x/log/train.log punctkit train ... --ngpu $ngpu
# with the options --mem 4G, --gpu N, --num-threads N, --time T, --max-jobs-run N.
cmd_backend=${cmd_backend:-local}

_utils=$(cd "$(dirname "${BASH_SOURCE[0]}")/utils" && pwd)  # the recipe's utils/ link, made absolute
case "$cmd_backend" in
  local)
    train_cmd="$_utils/run.sh"
    decode_cmd="$_utils/run.sh"
    cuda_cmd="$_utils/run.sh"
    ;;
  slurm)
    train_cmd="$_utils/slurm.sh --config conf/slurm.conf --mem 4G"
    decode_cmd="$_utils/slurm.sh --config conf/slurm.conf --mem 4G"
    cuda_cmd="$_utils/slurm.sh --config conf/slurm.conf --mem 8G"
    ;;
  sge)
    train_cmd="$_utils/queue.sh --config conf/queue.conf --mem 4G"
    decode_cmd="$_utils/queue.sh --config conf/queue.conf --mem 4G"
    cuda_cmd="$_utils/queue.sh --config conf/queue.conf --mem 8G"
    ;;
  *)
    echo "cmd.sh: cmd_backend must be local, slurm or sge, not '$cmd_backend'" >&2
    return 1 2>/dev/null || exit 1
    ;;
esac
unset _utils
export train_cmd decode_cmd cuda_cmd
