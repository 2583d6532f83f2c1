#!/usr/bin/env bash
# A throwaway single-node Slurm cluster for the sweep tests: munged + slurmctld + slurmd on this
# machine, every file (key, socket, slurm.conf, state, spool, logs, pid files) inside one folder.
#
#   slurm_cluster.sh start DIR [OWNER_PID]
#       configure and start; prints "SLURM_CONF=DIR/slurm.conf" once the node is idle (exit 0).
#       Exit 77: Slurm or munge is not installed, or not root (the caller skips); any other failure
#       exits 1 with the daemons' log tails on stderr. With OWNER_PID, a watchdog stops the cluster
#       when that process is gone, so a test killed by a timeout leaves no daemons behind.
#   slurm_cluster.sh stop DIR
#       cancels the cluster's jobs and stops its daemons (always exit 0).
#
# Needs root (SlurmUser=root). No cgroups: ProctrackType=proctrack/linuxproc, TaskPlugin=task/none.
# Ports are picked free at start, so a second cluster (or a real one) on the machine is not hit.
set -uo pipefail
cmd="${1:-}"; dir="${2:-}"; owner="${3:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start DIR [OWNER_PID] | stop DIR" >&2; exit 2; }
export PATH="$PATH:/usr/sbin:/sbin"
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }  # the daemon of pid file $1 runs
stop_pidfile() {  # kill the daemon whose pid file is $1 (TERM, then KILL after 5 s)
  alive "$1" || return 0
  local pid; pid="$(cat "$1")"
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
}

if [ "$cmd" = stop ]; then
  # Jobs first (they belong to this cluster only: SLURM_CONF names it), so no task outlives it.
  if alive "$dir/slurmctld.pid"; then
    export SLURM_CONF="$dir/slurm.conf"
    timeout 10 scancel --user="$(id -un)" >/dev/null 2>&1
    until=$((SECONDS + 15))  # jobs gone, or 15 s (an unanswering controller makes each call slow)
    while [ "$SECONDS" -lt "$until" ] && [ -n "$(timeout 5 squeue -h 2>/dev/null)" ]; do sleep 0.2; done
  fi
  stop_pidfile "$dir/slurmd.pid"; stop_pidfile "$dir/slurmctld.pid"; stop_pidfile "$dir/munged.pid"
  exit 0
fi
[ "$cmd" = start ] || { echo "unknown command '$cmd' (start|stop)" >&2; exit 2; }

for tool in munged mungekey slurmctld slurmd sbatch squeue scontrol sinfo; do
  command -v "$tool" >/dev/null || { echo "$tool not found: install Debian's slurm-wlm and munge" >&2; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "a test cluster needs root (SlurmUser=root)" >&2; exit 77; }

fail() {  # report, stop what did start, exit 1
  echo "slurm_cluster: $*" >&2
  for log in munged.log slurmctld.log.try1 slurmd.log.try1 slurmctld.log slurmd.log daemons.err; do
    [ -s "$dir/$log" ] && { echo "--- $dir/$log (last lines)" >&2; tail -n 15 "$dir/$log" >&2; }
  done
  bash "$self" stop "$dir"
  exit 1
}
free_port() {  # a TCP port nobody listens on (a connect is refused), outside Slurm's defaults and $1
  local port
  for _ in $(seq 200); do
    port=$((20000 + RANDOM % 12000))  # below Linux's ephemeral range (32768-60999)
    [ "$port" != "${1:-}" ] || continue
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
  echo 26817
}

mkdir -p "$dir" && chmod 0700 "$dir" || fail "cannot create $dir"
dir="$(cd "$dir" && pwd)"
mkdir -p "$dir/state" "$dir/spool" "$dir/munge" && chmod 0700 "$dir/munge"

# munge: own key, socket, pid, log and seed files.
timeout 30 mungekey -c -f -k "$dir/munge/munge.key" 2>/dev/null ||
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 0400 "$dir/munge/munge.key"
socket="$dir/munge/munge.socket"
# Daemons get no stdio of ours: a caller reading our output until EOF must not wait for them. Each
# start has a timeout: the daemons fork into their own session, which timeout's signal leaves alone.
timeout 30 munged --force --key-file="$dir/munge/munge.key" --socket="$socket" --pid-file="$dir/munged.pid" \
  --log-file="$dir/munged.log" --seed-file="$dir/munge/munged.seed" </dev/null >/dev/null 2>>"$dir/daemons.err" ||
  fail "munged did not start"
for _ in $(seq 50); do [ -S "$socket" ] && break; sleep 0.1; done
timeout 10 munge -S "$socket" -n | timeout 10 unmunge -S "$socket" >/dev/null || fail "munge -n | unmunge failed"

# slurm.conf: this host as controller and the only node, CPUs and memory as slurmd -C sees them.
host="$(hostname -s)"
hw="$(timeout 30 slurmd -C | head -n 1)"
cpus="$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$hw")"
memory="$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")"
[ -n "$cpus" ] && [ -n "$memory" ] || fail "slurmd -C printed no CPUs/RealMemory: $hw"
export SLURM_CONF="$dir/slurm.conf"

write_conf() {  # slurm.conf with ports picked now
  local ctld_port; ctld_port="$(free_port)"
  cat >"$SLURM_CONF" <<CONF
ClusterName=momentkv-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$(free_port "$ctld_port")
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MinJobAge=300
KillWait=5
InactiveLimit=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
}

# Starts slurmctld and slurmd and waits (up to 30 s of wall time) for the node to be idle, resuming
# it once if it came up down/drained. Every client call has its own timeout and the daemons are
# checked each round: a controller that died makes each sinfo retry for ~10 s, which must not turn
# this wait into minutes. Returns 0 when idle; 1 with the reason in $why.
start_daemons() {
  write_conf
  timeout 30 slurmctld -c -f "$SLURM_CONF" </dev/null >/dev/null 2>>"$dir/daemons.err" || { why="slurmctld did not start"; return 1; }
  timeout 30 slurmd -f "$SLURM_CONF" </dev/null >/dev/null 2>>"$dir/daemons.err" || { why="slurmd did not start"; return 1; }
  local resumed=0 state="" until=$((SECONDS + 30))
  while [ "$SECONDS" -lt "$until" ]; do
    alive "$dir/slurmctld.pid" || { sleep 0.5; alive "$dir/slurmctld.pid" || { why="slurmctld exited"; return 1; }; }
    alive "$dir/slurmd.pid" || { sleep 0.5; alive "$dir/slurmd.pid" || { why="slurmd exited"; return 1; }; }
    state="$(timeout 5 sinfo -h -n "$host" -o %T 2>/dev/null | head -n 1)"
    case "$state" in
      idle) return 0 ;;
      down*|drain*|inval*)
        if [ "$resumed" -eq 0 ]; then timeout 5 scontrol update nodename="$host" state=resume >/dev/null 2>&1; resumed=1; fi ;;
    esac
    sleep 0.2
  done
  why="the node did not become idle within 30 s (state '${state:-none}')"
  return 1
}

if [ -n "$owner" ]; then
  # Detached (own session): it must survive the owner's process group being killed.
  setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 2; done; bash "$2" stop "$3"' watchdog "$owner" "$self" "$dir" \
    </dev/null >/dev/null 2>&1 &
fi

# Two tries: a daemon that fails to come up once (a port taken between the pick and the bind) gets
# a second start on new ports with a clean state folder; its first logs are kept beside.
for attempt in 1 2; do
  why=""
  if start_daemons; then echo "SLURM_CONF=$SLURM_CONF"; exit 0; fi
  [ "$attempt" -eq 2 ] && break
  echo "slurm_cluster: try $attempt failed ($why); starting again on new ports" >&2
  stop_pidfile "$dir/slurmd.pid"; stop_pidfile "$dir/slurmctld.pid"
  for log in slurmctld.log slurmd.log; do [ -f "$dir/$log" ] && mv "$dir/$log" "$dir/$log.try$attempt"; done
  rm -rf "$dir/state" "$dir/spool" && mkdir -p "$dir/state" "$dir/spool"
done
fail "$why"
