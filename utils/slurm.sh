#!/usr/bin/env bash
# Kaldi-style launcher, slurm backend: $cmd [--mem 4G] [--gpu 1] [--num-threads N] [--max-jobs-run N]
#   [--time T] [JOB=1:N] LOG COMMAND [ARG]...   (see utils/launch.py for the details)
exec python3 "$(dirname "$(readlink -f "$0")")/launch.py" slurm "$@"
