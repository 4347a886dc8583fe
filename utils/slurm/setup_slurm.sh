#!/usr/bin/env bash
# Start a one-node SLURM on this machine, for tests and for trying recipes with
# cmd_backend=slurm. Needs root (or password-less sudo) and Debian/Ubuntu apt.
#
#   utils/slurm/setup_slurm.sh      install slurm-wlm + munge if missing, write
#                                   /etc/slurm/slurm.conf, start munged,
#                                   slurmctld and slurmd, wait for the node
#   utils/slurm/stop_slurm.sh       stop the daemons this script started
#
# Prints "started" or "already running" on its last line; exits non-zero with a
# reason when SLURM cannot be brought up. Never touches a slurm.conf that it did
# not write itself (a real cluster's configuration is left alone).
# Settings: PUNCTKIT_SLURM_DIR (state, logs, pid files; default
# /var/tmp/punctkit-slurm), PUNCTKIT_SLURM_TIMEOUT (seconds to wait, default 60).
set -euo pipefail

state=${PUNCTKIT_SLURM_DIR:-/var/tmp/punctkit-slurm}
timeout=${PUNCTKIT_SLURM_TIMEOUT:-60}
conf=/etc/slurm/slurm.conf
marker="# written by punctkit utils/slurm/setup_slurm.sh"
node=$(hostname -s)

die() { echo "setup_slurm.sh: $*" >&2; exit 1; }

if [ "$(id -u)" -eq 0 ]; then sudo=""; elif sudo -n true 2>/dev/null; then sudo="sudo -n"; else
  die "needs root or password-less sudo (to install packages and start the daemons)"; fi

node_state() { sinfo -h -N -n "$node" -o %T 2>/dev/null | head -n1 || true; }

# Already up (e.g. a second test session)? Then leave everything as it is.
# (sinfo retries for many seconds when no controller runs: ask it only when one may.)
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
if command -v sinfo >/dev/null && { ! grep -qsF "$marker" "$conf" || alive "$state/slurmctld.pid"; }; then
  case "$(node_state)" in idle|mixed|allocated|completing) echo "already running"; exit 0 ;; esac
fi
# Daemons of an earlier start that is not healthy: stop them before starting afresh.
for f in "$state/slurmd.pid" "$state/slurmctld.pid"; do
  if alive "$f"; then
    PUNCTKIT_SLURM_DIR=$state "$(dirname "$0")/stop_slurm.sh" >/dev/null; break
  fi
done

# 1. packages
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null \
   || ! command -v sbatch >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  pkgs="slurm-wlm munge"
  $sudo apt-get install -y --no-install-recommends $pkgs >/dev/null 2>&1 \
    || { $sudo apt-get update >/dev/null 2>&1 && $sudo apt-get install -y --no-install-recommends $pkgs >/dev/null; } \
    || die "apt-get install $pkgs failed"
fi

# 2. configuration: one node (this machine), one partition, no cgroups, no accounting
if [ -f "$conf" ] && ! grep -qF "$marker" "$conf"; then
  die "$conf exists and was not written by this script; not touching a real cluster's configuration"
fi
cpus=$(nproc)
mem=$(free -m | awk '/^Mem:/ {print int($2 * 0.9)}')
$sudo mkdir -p /etc/slurm "$state/ctld" "$state/d"
$sudo tee "$conf" >/dev/null <<EOF
$marker
ClusterName=punctkit
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdTimeout=60
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
# Debian's default cgroup.conf would ask for cgroups; none of our plugins use it.
[ -f /etc/slurm/cgroup.conf ] || echo "CgroupPlugin=autodetect" | $sudo tee /etc/slurm/cgroup.conf >/dev/null

# 3. munge: key, runtime dirs, daemon (as the munge user, as it insists)
[ -s /etc/munge/munge.key ] || $sudo mungekey --create --force >/dev/null 2>&1 \
  || $sudo dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
$sudo mkdir -p /run/munge /var/lib/munge /var/log/munge
$sudo chown munge:munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
$sudo chmod 0400 /etc/munge/munge.key
$sudo chmod 0755 /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  $sudo runuser -u munge -- /usr/sbin/munged </dev/null >/dev/null 2>&1 || die "munged did not start (see /var/log/munge/munged.log)"
  for _ in $(seq 20); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.5; done
  munge -n | unmunge >/dev/null 2>&1 || die "munge does not work (see /var/log/munge/munged.log)"
  touch "$state/munged.started"   # so that stop_slurm.sh stops only a munged started here
fi

# 4. slurm daemons (they put themselves in the background); -c: start with no old jobs
$sudo /usr/sbin/slurmctld -c </dev/null >/dev/null 2>&1 || die "slurmctld did not start (see $state/slurmctld.log)"
$sudo /usr/sbin/slurmd -N "$node" </dev/null >/dev/null 2>&1 || die "slurmd did not start (see $state/slurmd.log)"

# 5. wait until the node takes jobs
deadline=$((SECONDS + timeout)); st=""
while [ $SECONDS -lt $deadline ]; do
  st=$(node_state)
  case "$st" in
    idle|mixed) echo "started"; exit 0 ;;
    down*|drain*) $sudo scontrol update NodeName="$node" State=RESUME 2>/dev/null || true ;;
  esac
  sleep 1
done
PUNCTKIT_SLURM_DIR=$state "$(dirname "$0")/stop_slurm.sh" >/dev/null 2>&1 || true
die "node $node not idle after ${timeout}s (state '${st:-none}'); see $state/slurmctld.log and $state/slurmd.log"
