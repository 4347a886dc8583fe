#!/usr/bin/env bash
# Stop the one-node SLURM started by utils/slurm/setup_slurm.sh: slurmd,
# slurmctld and (if that script started it) munged, each by the pid in its pid file.
set -uo pipefail

state=${PUNCTKIT_SLURM_DIR:-/var/tmp/punctkit-slurm}
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo -n"; fi

stop_pid_file() {  # stop the process named in pid file $1, wait up to 10 s for it to go
  local f=$1 pid
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    $sudo kill "$pid"
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && $sudo kill -9 "$pid"
  fi
  $sudo rm -f "$f"
}

stop_pid_file "$state/slurmd.pid"
stop_pid_file "$state/slurmctld.pid"
if [ -f "$state/munged.started" ]; then
  stop_pid_file /run/munge/munged.pid
  $sudo rm -f "$state/munged.started"
fi
echo "stopped"
