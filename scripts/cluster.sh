#!/usr/bin/env bash
# A small Slurm cluster inside this machine, for the job scripts and the `cluster` tests:
# one munged, one slurmctld and NODES (default 3) slurmd, each slurmd an emulated node
# in its own network, UTS and mount namespace (own address on a bridge, own hostname,
# own /etc/hosts). The nodes share the machine's cores and filesystem; see
# docs/hpc-guide.md ("A cluster on one machine").
#
#   scripts/cluster.sh start  [DIR]   start (idempotent: a healthy cluster is left as is,
#                                     a broken one is torn down and started afresh)
#   scripts/cluster.sh stop   [DIR]   stop everything it started, by process id
#   scripts/cluster.sh status [DIR]   exit 0 when every daemon runs and every node is up
#   scripts/cluster.sh check          exit 0 when namespaces can be made here, 77 if not
#   scripts/cluster.sh env    [DIR]   print `export SLURM_CONF=...` for a shell
#   HOMODYNE_CLUSTER_NODE=N scripts/cluster.sh kill-node [DIR]
#                                     every process of node N killed (a lost node)
#   HOMODYNE_CLUSTER_NODE=N scripts/cluster.sh revive-node [DIR]
#                                     node N's slurmd started again, back in service
#   HOMODYNE_CLUSTER_NODE=N scripts/cluster.sh node-exec CMD...
#                                     CMD inside node N's namespaces (its mounts too)
#   HOMODYNE_CLUSTER_NODE=N scripts/cluster.sh cut-link [DIR]
#                                     node N's link to the bridge down (a cut cable: its
#                                     processes live on, unreachable)
#   HOMODYNE_CLUSTER_NODE=N scripts/cluster.sh restore-link [DIR]
#                                     node N's link up again (Slurm takes the node back
#                                     by itself; not waited for)
#   HOMODYNE_CLUSTER_NODE=N scripts/cluster.sh node-link [DIR]
#                                     the name of node N's link on the bridge side (its
#                                     counters count what the node sends and receives)
#   HOMODYNE_CLUSTER_NODE=N scripts/cluster.sh node-pids [DIR]
#                                     "pid executable" of every process of node N
#
# DIR (default $HOMODYNE_CLUSTER_DIR, else build/cluster) holds every file of the cluster:
# slurm.conf, the munge socket, state, spool, logs, pid files. The names of the
# namespaces, links and bridge and the subnet are derived from DIR, so clusters of two
# build trees do not collide. Every wait is bounded; no step needs systemd.
set -uo pipefail

cmd=${1:-status}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ "$cmd" = node-exec ]; then
  dir=${HOMODYNE_CLUSTER_DIR:-$here/build/cluster}
else
  dir=${2:-${HOMODYNE_CLUSTER_DIR:-$here/build/cluster}}
fi
nodes=${HOMODYNE_CLUSTER_NODES:-3}
start_timeout=${HOMODYNE_CLUSTER_START_TIMEOUT:-30}

log() { echo "cluster: $*" >&2; }
die() { log "$*"; exit 1; }

# Refuses before anything is made when this machine cannot host the emulated nodes.
# Exit 77: the caller (ctest, SKIP_RETURN_CODE) reports the tests as skipped.
check_capable() {
  local why=""
  if [ "$(id -u)" -ne 0 ]; then
    why="not root (network namespaces, veth links and a bridge need CAP_SYS_ADMIN and CAP_NET_ADMIN)"
  else
    local b
    for b in ip nsenter unshare setpriv slurmctld slurmd sbatch munged munge; do
      command -v "$b" > /dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin command -v "$b" > /dev/null 2>&1 ||
        why="$why $b"
    done
    if [ -n "$why" ]; then
      why="missing:$why (scripts/install-deps.sh installs them)"
    else
      local probe="hmcprobe$$"
      if ! timeout 10 ip netns add "$probe" 2> /dev/null; then
        why="cannot create a network namespace (no CAP_SYS_ADMIN/CAP_NET_ADMIN?)"
      elif ! timeout 10 ip link add "${probe}b" type bridge 2> /dev/null; then
        why="cannot create a bridge (no CAP_NET_ADMIN?)"
      else
        ip link del "${probe}b" 2> /dev/null
      fi
      ip netns del "$probe" 2> /dev/null
    fi
  fi
  if [ -n "$why" ]; then
    echo "SKIP: no emulated cluster here: $why"
    return 77
  fi
  return 0
}

export PATH=$PATH:/usr/sbin:/sbin
# Before anything is made: start, stop and check are skipped (77) where namespaces cannot
# be made (nothing can have been started there either).
case $cmd in
  check) check_capable; exit $? ;;
  start | stop) check_capable || exit $? ;;
esac
mkdir -p "$dir" 2> /dev/null || die "cannot create $dir"
dir=$(cd "$dir" && pwd)
# The node count of a running cluster is the one it was started with.
if [ "$cmd" != start ] && [ -s "$dir/nodes" ]; then nodes=$(cat "$dir/nodes"); fi
# A small number from DIR names the links and the subnet (10.213.<id>.0/24).
id=$(($(printf '%s' "$dir" | cksum | cut -d' ' -f1) % 200 + 20))
bridge="hmc${id}br"
subnet="10.213.${id}"
ctld_addr="${subnet}.1"
ctld_port=$((7000 + 2 * id))
conf="$dir/slurm.conf"
sock="$dir/munge/munge.socket"
node_name() { echo "n$1"; }
node_ns() { echo "hmc${id}-n$1"; }
node_veth() { echo "hmc${id}n$1"; }
node_addr() { echo "${subnet}.$((10 + $1))"; }

# Process id from a pid file, only while that process still runs the expected program
# (a recycled pid is never signalled).
live_pid() {
  local file=$1 exe=$2 pid
  [ -s "$file" ] || return 1
  pid=$(cat "$file")
  [ -n "$pid" ] && alive "$pid" || return 1
  # (Debian's daemons are alternatives: /usr/sbin/slurmctld → slurmctld-wlm.)
  [ "$(readlink "/proc/$pid/exe" 2> /dev/null)" = "$(readlink -f "$exe")" ] || return 1
  echo "$pid"
}

# Running (a zombie waiting for a parent that may never reap it has ended).
alive() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2> /dev/null)" != Z ]; }

# Waits up to $1 tenths of a second until none of the pids runs.
wait_gone() {
  local tenths=$1 p running
  shift
  while [ "$tenths" -gt 0 ]; do
    running=0
    for p in "$@"; do alive "$p" && running=1; done
    [ $running -eq 0 ] && return 0
    sleep 0.1
    tenths=$((tenths - 1))
  done
  return 1
}

# TERM, then KILL after a bounded wait (a loaded machine may take seconds to end them).
stop_pids() {
  [ $# -eq 0 ] && return 0
  kill -TERM "$@" 2> /dev/null
  wait_gone 50 "$@" && return 0
  kill -KILL "$@" 2> /dev/null
  wait_gone 100 "$@"
}

do_stop() {
  local n ns p pids=() more all=()
  # Every process inside a node (slurmd, slurmstepd, job steps) by the namespace's pids,
  # and slurmctld, all at once (each daemon takes ~2 s to exit); munged last.
  for n in $(seq 1 "$nodes"); do
    ns=$(node_ns "$n")
    if ip netns list 2> /dev/null | grep -qw "^$ns"; then
      mapfile -t more < <(timeout 5 ip netns pids "$ns" 2> /dev/null)
      pids+=("${more[@]}")
    fi
  done
  p=$(live_pid "$dir/ctld/slurmctld.pid" /usr/sbin/slurmctld) && pids+=("$p")
  stop_pids "${pids[@]}"
  all+=("${pids[@]}")
  pids=()
  p=$(live_pid "$dir/munge/munged.pid" /usr/sbin/munged) && pids+=("$p")
  stop_pids "${pids[@]}"
  all+=("${pids[@]}")
  for n in $(seq 1 "$nodes"); do
    ns=$(node_ns "$n")
    ip link del "$(node_veth "$n")" 2> /dev/null
    ip netns del "$ns" 2> /dev/null
  done
  ip link del "$bridge" 2> /dev/null
  rm -f "$dir"/ctld/slurmctld.pid "$dir"/munge/munged.pid "$dir"/n*/slurmd.pid
  # What is left (none expected) is named, so a leak is seen.
  local left=""
  for n in $(seq 1 "$nodes"); do
    ip netns list 2> /dev/null | grep -qw "^$(node_ns "$n")" && left="$left netns $(node_ns "$n")"
  done
  ip link show "$bridge" > /dev/null 2>&1 && left="$left bridge $bridge"
  for p in "${all[@]}"; do alive "$p" && left="$left process $p"; done
  if [ -n "$left" ]; then
    log "stop left:$left"
    return 1
  fi
  return 0
}

link_is_up() { ip link show "$(node_veth "$1")" 2> /dev/null | grep -q '[<,]UP[,>]'; }

do_status() {
  [ -f "$conf" ] || return 1
  live_pid "$dir/munge/munged.pid" /usr/sbin/munged > /dev/null || return 1
  live_pid "$dir/ctld/slurmctld.pid" /usr/sbin/slurmctld > /dev/null || return 1
  local n states
  for n in $(seq 1 "$nodes"); do
    live_pid "$dir/n$n/slurmd.pid" /usr/sbin/slurmd > /dev/null || return 1
    # A link left cut (a failed fault test) makes the cluster broken at once, before
    # Slurm notices the silent node.
    link_is_up "$n" || return 1
  done
  states=$(SLURM_CONF=$conf timeout 5 sinfo -h -N -o '%N %T' 2> /dev/null) || return 1
  # A node is usable when idle, mixed or allocated (jobs may be running).
  [ "$(echo "$states" | grep -cE ' (idle|mixed|allocated|completing)$')" -eq "$nodes" ]
}

write_conf() {
  local hw n
  # The hardware line slurmd detects (cores, memory), so a node is never drained for a
  # mismatch; every emulated node has the whole machine's cores.
  hw=$(slurmd -C 2> /dev/null | head -1 | sed 's/^NodeName=[^ ]* //')
  [ -n "$hw" ] || hw="CPUs=$(nproc)"
  {
    echo "# Written by scripts/cluster.sh; every path is under $dir."
    echo "ClusterName=homodyne"
    echo "SlurmctldHost=localhost($ctld_addr)"
    echo "SlurmctldPort=$ctld_port"
    echo "SlurmdPort=6818"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    # A requeued job is held cred_expire + 1 s; 10 s keeps the requeue tests short.
    echo "AuthInfo=socket=$sock,cred_expire=10"
    echo "StateSaveLocation=$dir/ctld/state"
    echo "SlurmctldPidFile=$dir/ctld/slurmctld.pid"
    echo "SlurmctldLogFile=$dir/ctld/slurmctld.log"
    echo "SlurmdSpoolDir=$dir/%n/spool"
    echo "SlurmdPidFile=$dir/%n/slurmd.pid"
    echo "SlurmdLogFile=$dir/%n/slurmd.log"
    # Per node: the PMIx plugins of two nodes would otherwise share one app directory.
    echo "TmpFS=$dir/%n/tmp"
    # No cgroups and no systemd here: processes tracked by parent pid, tasks bound with
    # sched_setaffinity.
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/affinity"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "MpiDefault=pmix"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "JobCompType=jobcomp/none"
    echo "SchedulerType=sched/backfill"
    echo "SchedulerParameters=sched_interval=2,bf_interval=2"
    echo "ReturnToService=2"
    echo "SlurmctldTimeout=30"
    # A silent node is declared down SlurmdTimeout after its last answer: the lost-node
    # tests wait that long (Slurm's default is 300 s).
    echo "SlurmdTimeout=15"
    echo "MessageTimeout=10"
    echo "InactiveLimit=0"
    echo "KillWait=5"
    # sbatch --wait polls every 2 s while 2 s >= MinJobAge/2 and otherwise quadruples its
    # interval (2, 8, 32 s): a finished job would be seen up to 32 s late. 5 s still keeps
    # a finished job's record longer than one poll.
    echo "MinJobAge=5"
    for n in $(seq 1 "$nodes"); do
      echo "NodeName=$(node_name "$n") NodeAddr=$(node_addr "$n") $hw State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=30 State=UP OverSubscribe=NO"
  } > "$conf"
}

# Node N's slurmd: nsenter (network) → unshare (UTS, mount) → sh → exec slurmd, so $! is
# slurmd's own pid. Its /etc/hosts is bind-mounted in the node's private mount namespace, and
# it has its own /tmp and /dev/shm, as a real node has: Open MPI keeps its session directory
# and shared-memory segments there, and jobs that ended on the node (or run on another one)
# must not share or clean up those of a job starting.
# (Not `ip netns exec`: it mounts a fresh /sys without the cgroup mounts slurmd probes.)
start_slurmd() {
  local n=$1
  SLURM_CONF=$conf nsenter --net="/run/netns/$(node_ns "$n")" \
    unshare --uts --mount --propagation private -- \
    sh -c 'hostname "$1" && mount --bind "$2" /etc/hosts &&
      mount -t tmpfs -o mode=1777,size=2g node-tmp /tmp &&
      mount -t tmpfs -o mode=1777,size=2g node-shm /dev/shm &&
      exec /usr/sbin/slurmd -D -N "$1"' \
    slurmd-node "$(node_name "$n")" "$dir/n$n/hosts" \
    >> "$dir/n$n/slurmd.out" 2>&1 < /dev/null &
  echo $! > "$dir/n$n/slurmd.pid"
}

node_state() { SLURM_CONF=$conf timeout 5 sinfo -h -n "$(node_name "$1")" -o %T 2> /dev/null; }

# A lost node, for the fault tests: every process of node N (slurmd, slurmstepd, the job's
# ranks) killed at once with SIGKILL, as a power loss would; the namespace and its link stay.
do_kill_node() {
  local n=$1 ns pids=()
  ns=$(node_ns "$n")
  ip netns list 2> /dev/null | grep -qw "^$ns" || die "node $n has no namespace $ns (is the cluster running?)"
  mapfile -t pids < <(timeout 5 ip netns pids "$ns" 2> /dev/null)
  [ ${#pids[@]} -gt 0 ] || die "node $n runs no process"
  kill -KILL "${pids[@]}" 2> /dev/null
  wait_gone 100 "${pids[@]}" || die "node $n: processes survived SIGKILL: ${pids[*]}"
  log "node $(node_name "$n") lost: killed ${#pids[@]} process(es)"
}

# A cut link, for the fault tests: the bridge side of node N's veth pair set down, as a
# switch port whose cable is pulled. The node's eth0 loses its carrier; nothing is sent
# or received, and no process anywhere is told (no reset, no error on its sockets).
do_cut_link() {
  local n=$1 veth
  veth=$(node_veth "$n")
  ip link show "$veth" > /dev/null 2>&1 || die "node $n has no link $veth (is the cluster running?)"
  ip link set "$veth" down || die "cannot set $veth down"
  log "node $(node_name "$n") cut off: link $veth down"
}

do_restore_link() {
  local n=$1 veth
  veth=$(node_veth "$n")
  ip link show "$veth" > /dev/null 2>&1 || die "node $n has no link $veth (is the cluster running?)"
  ip link set "$veth" up || die "cannot set $veth up"
  log "node $(node_name "$n") link $veth up again"
}

do_node_pids() {
  local n=$1 ns p
  ns=$(node_ns "$n")
  ip netns list 2> /dev/null | grep -qw "^$ns" || die "node $n has no namespace $ns (is the cluster running?)"
  for p in $(timeout 5 ip netns pids "$ns" 2> /dev/null); do
    alive "$p" && echo "$p $(readlink "/proc/$p/exe" 2> /dev/null)"
  done
  return 0
}

# A command inside node N's namespaces (network, hostname, mounts: those of its slurmd, so a
# mount made here is seen by the node's jobs and by no other node).
do_node_exec() {
  local n=$1 pid
  shift
  pid=$(live_pid "$dir/n$n/slurmd.pid" /usr/sbin/slurmd) || die "node $n's slurmd is not running"
  nsenter -t "$pid" -n -u -m -- "$@"
}

# The lost node back: its slurmd started again; with ReturnToService=2 the controller takes
# it back as soon as it registers. Waits until the node is usable.
do_revive_node() {
  local n=$1
  live_pid "$dir/n$n/slurmd.pid" /usr/sbin/slurmd > /dev/null && return 0
  start_slurmd "$n"
  node_usable() { node_state "$n" | grep -qE '^(idle|mixed|allocated)$'; }
  wait_for "$start_timeout" node_usable || die "node $(node_name "$n") did not come back within $start_timeout s (state: $(node_state "$n"))"
  log "node $(node_name "$n") back: $(node_state "$n")"
}

wait_for() { # seconds, command...: by the clock, however long each try takes
  local deadline=$((SECONDS + $1))
  shift
  while [ $SECONDS -lt $deadline ]; do
    "$@" && return 0
    sleep 0.2
  done
  return 1
}

munge_ok() { timeout 2 munge -S "$sock" -n 2> /dev/null | timeout 2 unmunge -S "$sock" > /dev/null 2>&1; }
nodes_up() { do_status; }

do_start() {
  if do_status; then
    log "already running ($dir)"
    return 0
  fi
  do_stop > /dev/null 2>&1
  local n ns veth

  mkdir -p "$dir/munge" "$dir/ctld/state"
  rm -rf "${dir:?}"/ctld/state/*
  for n in $(seq 1 "$nodes"); do
    rm -rf "${dir:?}/n$n"
    mkdir -p "$dir/n$n/spool" "$dir/n$n/tmp"
  done
  write_conf
  echo "$nodes" > "$dir/nodes"

  # munged: its own socket and pid in DIR, run as user munge with the package's key.
  chown munge:munge "$dir/munge"
  chmod 0755 "$dir/munge"   # munged wants its socket directory searchable by all
  setpriv --reuid=munge --regid=munge --init-groups -- /usr/sbin/munged --foreground \
    --socket="$sock" --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" --key-file=/etc/munge/munge.key \
    > "$dir/munge/munged.out" 2>&1 < /dev/null &
  echo $! > "$dir/munge/munged.pid"
  wait_for 10 munge_ok || {
    cat "$dir/munge/munged.out" >&2
    do_stop
    die "munged did not answer within 10 s"
  }

  # The network: a bridge with the controller's address, one veth pair per node.
  ip link add "$bridge" type bridge || {
    do_stop
    die "cannot create bridge $bridge"
  }
  ip addr add "$ctld_addr/24" dev "$bridge"
  ip link set "$bridge" up
  for n in $(seq 1 "$nodes"); do
    ns=$(node_ns "$n")
    veth=$(node_veth "$n")
    ip netns add "$ns" &&
      ip link add "$veth" type veth peer name eth0 netns "$ns" &&
      ip link set "$veth" master "$bridge" &&
      ip link set "$veth" up &&
      ip -n "$ns" link set lo up &&
      ip -n "$ns" addr add "$(node_addr "$n")/24" dev eth0 &&
      ip -n "$ns" link set eth0 up || {
      do_stop
      die "cannot set up node $n's namespace $ns"
    }
    {
      echo "127.0.0.1 localhost"
      echo "$ctld_addr ctl"
      local m
      for m in $(seq 1 "$nodes"); do echo "$(node_addr "$m") $(node_name "$m")"; done
    } > "$dir/n$n/hosts"
  done

  SLURM_CONF=$conf /usr/sbin/slurmctld -D -c > "$dir/ctld/slurmctld.out" 2>&1 < /dev/null &
  echo $! > "$dir/ctld/slurmctld.pid"

  for n in $(seq 1 "$nodes"); do start_slurmd "$n"; done

  if ! wait_for "$start_timeout" nodes_up; then
    log "the nodes were not up within $start_timeout s; logs:"
    tail -n 5 "$dir"/ctld/slurmctld.out "$dir"/n*/slurmd.out >&2
    SLURM_CONF=$conf timeout 5 sinfo -N >&2
    do_stop
    exit 1
  fi
  log "up: $nodes nodes, SLURM_CONF=$conf"
}

case $cmd in
  start) do_start ;;
  stop) do_stop ;;
  status)
    if do_status; then
      echo "running: SLURM_CONF=$conf"
      SLURM_CONF=$conf timeout 5 sinfo -N
    else
      echo "not running ($dir)"
      exit 1
    fi
    ;;
  env) echo "export SLURM_CONF=$conf" ;;
  kill-node) do_kill_node "${HOMODYNE_CLUSTER_NODE:?set HOMODYNE_CLUSTER_NODE to the node number}" ;;
  node-exec)
    shift 1
    do_node_exec "${HOMODYNE_CLUSTER_NODE:?set HOMODYNE_CLUSTER_NODE to the node number}" "$@"
    ;;
  revive-node) do_revive_node "${HOMODYNE_CLUSTER_NODE:?set HOMODYNE_CLUSTER_NODE to the node number}" ;;
  cut-link) do_cut_link "${HOMODYNE_CLUSTER_NODE:?set HOMODYNE_CLUSTER_NODE to the node number}" ;;
  restore-link) do_restore_link "${HOMODYNE_CLUSTER_NODE:?set HOMODYNE_CLUSTER_NODE to the node number}" ;;
  node-link) node_veth "${HOMODYNE_CLUSTER_NODE:?set HOMODYNE_CLUSTER_NODE to the node number}" ;;
  node-pids) do_node_pids "${HOMODYNE_CLUSTER_NODE:?set HOMODYNE_CLUSTER_NODE to the node number}" ;;
  *)
    echo "usage: $0 start|stop|status|check|env|kill-node|revive-node|cut-link|restore-link|node-link|node-pids|node-exec [DIR]" >&2
    exit 2
    ;;
esac
