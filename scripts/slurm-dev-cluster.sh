#!/usr/bin/env bash
# usage: scripts/slurm-dev-cluster.sh up [DIR] | down [DIR] | status [DIR]
#
# A two-node Slurm cluster on loopback, for trying the slurm executor on one
# machine and for its tests: munged, slurmctld and two slurmd (`n1`, `n2`,
# distinct ports and spool directories), all state under DIR (default
# target/slurm-dev). `up` prints the `export …` lines after which `sinfo`,
# `srun` and `assay build --executor slurm` use it; `down` stops every
# daemon it started. Needs `slurm-wlm` and `munge` (apt), and root (slurmd
# launches job steps as their user).
set -euo pipefail
cmd=${1:-}
dir=$(realpath -m "${2:-target/slurm-dev}")
conf="$dir/slurm.conf"

# Ports: the cluster's own, from DIR, so two clusters (two checkouts) can
# coexist.
base=$((20000 + $(printf '%s' "$dir" | cksum | cut -d' ' -f1) % 20000))

stop() {
    for p in "$dir"/run/*.pid; do
        [ -e "$p" ] || continue
        pid=$(cat "$p")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$p"
    done
}

case "$cmd" in
up)
    command -v slurmctld >/dev/null || { echo "slurm-dev-cluster: install slurm-wlm and munge (apt-get install slurm-wlm munge)" >&2; exit 1; }
    stop
    mkdir -p "$dir"/{run,log,state,spool,munge}
    chmod 700 "$dir/munge"
    if [ ! -s "$dir/munge/munge.key" ]; then
        dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
        chmod 400 "$dir/munge/munge.key"
    fi
    socket="$dir/munge/munge.socket"
    munged --force --key-file="$dir/munge/munge.key" --socket="$socket" \
        --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
        --seed-file="$dir/munge/seed"
    cpus=$(nproc)
    cat >"$conf" <<EOF
ClusterName=assaydev
SlurmctldHost=localhost
SlurmctldPort=$base
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmdSpoolDir=$dir/spool/%n
StateSaveLocation=$dir/state
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MinJobAge=30
SlurmdTimeout=10
SlurmctldTimeout=10
InactiveLimit=0
KillWait=5
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + 1)) CPUs=$cpus State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + 2)) CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
    export SLURM_CONF="$conf"
    slurmctld -f "$conf"
    slurmd -f "$conf" -N n1
    slurmd -f "$conf" -N n2
    for _ in $(seq 100); do
        idle=$(sinfo -h -o '%T %D' 2>/dev/null | awk '$1=="idle"{print $2}')
        [ "${idle:-0}" = 2 ] && break
        sleep 0.1
    done
    if [ "${idle:-0}" != 2 ]; then
        echo "slurm-dev-cluster: the nodes did not come up (logs in $dir/log):" >&2
        sinfo >&2 || true
        exit 1
    fi
    echo "export SLURM_CONF=$conf"
    ;;
down)
    stop
    ;;
status)
    SLURM_CONF="$conf" sinfo
    ;;
*)
    sed -n '2,10p' "$0" >&2
    exit 2
    ;;
esac
