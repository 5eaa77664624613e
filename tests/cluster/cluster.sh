#!/usr/bin/env bash
# A small real cluster on this machine, for the lab's `cluster` tests and by hand.
#
# Nodes node1..nodeN (N = 2 or 3) are Linux namespaces: each has its own processes (a PID
# namespace), network (address 10.77.0.1N on eth0), hostname, and mount namespace in which DIR/tmp
# is a folder of that node alone (as /tmp is on a real node; the rest of the filesystem is shared,
# as a cluster's home or project filesystem is). A controller node `ctl` (10.77.0.1, the login
# node) holds the bridge that joins them, munged and slurmctld; every node runs its own slurmd, in
# the partition `lab` (1 CPU a node). Nothing listens outside these namespaces, and nothing is
# left behind by `down`: the namespaces live only as long as their processes (no `ip netns`
# mount), and `down` kills each node's init, with it every process on the node.
#
#   tests/cluster/cluster.sh up DIR [N]        # DIR must not exist, every folder above it must
#                                               # be open to all (munged checks); about 2 s
#   tests/cluster/cluster.sh on DIR NODE CMD..  # run CMD on NODE (ctl, node1, ...) with SLURM_CONF
#                                               # and RAY_TMPDIR=DIR/tmp set (sbatch from ctl)
#   tests/cluster/cluster.sh pids DIR [NODE]    # the processes running on the cluster (or NODE)
#   tests/cluster/cluster.sh cut DIR NODE       # unplug NODE's link (mend DIR NODE plugs it back)
#   tests/cluster/cluster.sh down DIR           # kill everything on the cluster, remove DIR
#
# Needs root, iproute2, util-linux (unshare, nsenter) and SLURM with munge (Debian:
# apt-get install slurm-wlm munge).
set -euo pipefail

SUBNET=10.77.0

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

# The init of node $1 (its PID as this machine sees it), whose namespaces everything that runs on
# the node enters.
holder() { cat "$DIR/$1/pid"; }

# ENTER: the command prefix that runs a command on node $1, in this working directory (the
# filesystem is the same on every node but for DIR/tmp and /etc/hosts).
enter() {
    [[ -f $DIR/$1/pid ]] || { echo "cluster.sh: no node $1 in $DIR" >&2; exit 2; }
    ENTER=(nsenter -t "$(holder "$1")" --pid --net --uts --mount --wd="$PWD" --
           env "SLURM_CONF=$DIR/slurm.conf" "RAY_TMPDIR=$DIR/tmp")
}

on() {
    enter "$1"
    shift
    "${ENTER[@]}" "$@"
}

# CMD in node $1's network alone (this machine's processes and files otherwise): for `ip`.
net() {
    local node=$1
    shift
    nsenter -t "$(holder "$node")" --net -- "$@"
}

# A daemon on node $1, its output appended to the log $2: in its own session, a child of the
# node's init (so no process outside the node waits for it).
spawn() {
    enter "$1"
    local log=$2
    shift 2
    "${ENTER[@]}" setsid --fork "$@" </dev/null >>"$log" 2>&1
}

# Start a node: new PID, network, UTS and mount namespaces, whose init (a shell that reaps
# orphans, as init does) sets the hostname, the cluster's /etc/hosts, the node's own DIR/tmp and
# its own /proc. Killing that init kills everything on the node.
start_node() {
    local node=$1
    mkdir -p "$DIR/$node/tmp" "$DIR/$node/spool"
    setsid unshare --pid --fork --kill-child --net --uts --mount --propagation private bash -c '
        read -r pid _ < /proc/self/stat  # this shell as the machine sees it, before /proc is the node'"'"'s
        mount -t proc proc /proc && hostname "$1" && mount --bind "$2/hosts" /etc/hosts &&
        mount --bind "$2/$1/tmp" "$2/tmp" && ip link set lo up &&
        echo "$pid" > "$2/$1/pid.new" && mv "$2/$1/pid.new" "$2/$1/pid" || exit 1
        while :; do sleep 86400 & wait $!; done' _ "$node" "$DIR" </dev/null >"$DIR/$node/init.log" 2>&1 &
    for _ in $(seq 100); do [[ -f $DIR/$node/pid ]] && break; sleep 0.05; done
    [[ -f $DIR/$node/pid ]] || { cat "$DIR/$node/init.log" >&2; return 1; }
    readlink "/proc/$(holder "$node")/ns/pid" > "$DIR/$node/pidns"
}

write_config() {
    local n=$1 i nodes=""
    { echo "$SUBNET.1 ctl"; for i in $(seq "$n"); do echo "$SUBNET.1$i node$i"; done; } > "$DIR/hosts"
    cat /etc/hosts >> "$DIR/hosts"
    nodes="node[1-$n]"
    dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$DIR/munge/munge.key"
    cat > "$DIR/slurm.conf" <<EOF
# A cluster of $n namespace nodes (tests/cluster/cluster.sh)
ClusterName=lab
SlurmctldHost=ctl($SUBNET.1)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/ctl/state
SlurmctldPidFile=$DIR/ctl/slurmctld.pid
SlurmctldLogFile=$DIR/ctl/slurmctld.log
SlurmdSpoolDir=$DIR/%n/spool
SlurmdPidFile=$DIR/%n/slurmd.pid
SlurmdLogFile=$DIR/%n/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
# A cancelled job's processes get SIGTERM, then SIGKILL after KillWait seconds; a node that does
# not answer for SlurmdTimeout seconds is down (defaults 30 and 300: tests wait less).
KillWait=5
SlurmdTimeout=10
NodeName=$nodes NodeAddr=$SUBNET.1[1-$n] CPUs=1 State=UNKNOWN
PartitionName=lab Nodes=$nodes Default=YES MaxTime=INFINITE State=UP
EOF
}

up() {
    local n=${1:-3} i
    [[ $n == 2 || $n == 3 ]] || { echo "cluster.sh: 2 or 3 nodes, not $n" >&2; exit 2; }
    [[ ! -e $DIR ]] || { echo "cluster.sh: $DIR exists: up makes a new cluster there" >&2; exit 2; }
    mkdir -p "$DIR"/{ctl/state,munge,tmp}
    chmod 755 "$DIR" "$DIR/munge"  # munged wants every folder above its socket open to everyone
    echo "$n" > "$DIR/nodes"
    write_config "$n"
    start_node ctl
    net ctl ip link add br0 type bridge
    net ctl ip addr add "$SUBNET.1/24" dev br0
    net ctl ip link set br0 up
    for i in $(seq "$n"); do
        start_node "node$i"
        net ctl ip link add "node$i" type veth peer name eth0 netns "$(holder "node$i")"
        net ctl ip link set "node$i" master br0 up
        net "node$i" ip addr add "$SUBNET.1$i/24" dev eth0
        net "node$i" ip link set eth0 up
    done
    spawn ctl "$DIR/munge/munged.out" munged -F --key-file="$DIR/munge/munge.key" \
        --socket="$DIR/munge/munge.socket" --pid-file="$DIR/munge/munged.pid" \
        --seed-file="$DIR/munge/munged.seed" --log-file="$DIR/munge/munged.log"
    for _ in $(seq 100); do [[ -S $DIR/munge/munge.socket ]] && break; sleep 0.05; done
    [[ -S $DIR/munge/munge.socket ]] || { cat "$DIR/munge/munged.out" >&2; return 1; }
    spawn ctl "$DIR/ctl/slurmctld.out" slurmctld -D -f "$DIR/slurm.conf"
    for i in $(seq "$n"); do
        spawn "node$i" "$DIR/node$i/slurmd.out" slurmd -D -f "$DIR/slurm.conf"
    done
    wait_idle "$n"
}

# Until every node is idle in the partition (slurmd registered with slurmctld).
wait_idle() {
    local n=$1 deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)); do
        if [[ $(on ctl sinfo -h -p lab -t idle -o %D 2>/dev/null) == "$n" ]]; then return 0; fi
        sleep 0.1
    done
    echo "cluster.sh: the nodes did not come up idle; sinfo says:" >&2
    on ctl sinfo -N >&2 || true
    tail -n 20 "$DIR"/ctl/slurmctld.log "$DIR"/node*/slurmd.log "$DIR"/*/*.out >&2 || true
    return 1
}

# The processes on the cluster (on NODE alone, with NODE), one PID a line, as this machine sees them.
pids() {
    local ns=() node pid mine n
    for node in ${1:-$(nodes)}; do
        if [[ -f $DIR/$node/pidns ]]; then ns+=("$(cat "$DIR/$node/pidns")"); fi
    done
    ((${#ns[@]})) || return 0
    for pid in /proc/[0-9]*; do
        mine=$(readlink "$pid/ns/pid" 2>/dev/null) || continue
        for n in "${ns[@]}"; do
            if [[ $mine == "$n" ]]; then echo "${pid#/proc/}"; fi
        done
    done
}

nodes() {
    local node
    for node in "$DIR"/ctl "$DIR"/node*; do
        if [[ -f $node/pid ]]; then basename "$node"; fi
    done
}

# Kill every node's init: the kernel then kills every process in its PID namespace, and the
# namespaces, their mounts and the bridge go with the last of them.
down() {
    local node left
    [[ -d $DIR ]] || return 0
    for node in $(nodes); do kill -9 "$(holder "$node")" 2>/dev/null || true; done
    for _ in $(seq 100); do
        left=$(pids)
        [[ -z $left ]] && break
        sleep 0.05
    done
    [[ -z $left ]] || { echo "cluster.sh: processes left: $left" >&2; return 1; }
    rm -rf "$DIR"
}

command=${1:-}
[[ $# -ge 2 ]] || usage
DIR=$(realpath -m "$2")
shift 2
case $command in
    up) up "$@" ;;
    on) [[ $# -ge 2 ]] || usage; on "$@" ;;
    pids) pids "$@" ;;
    cut) net ctl ip link set "$1" down ;;
    mend) net ctl ip link set "$1" up ;;
    down) down ;;
    *) usage ;;
esac
