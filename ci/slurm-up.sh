#!/usr/bin/env bash
# Bring up a throw-away, single-node SLURM (munged + slurmctld + slurmd) on this
# machine for tests. Safe to run again: daemons already running are left alone.
# Needs root and Debian (apt). See ci/README.md for the environment variables.
# Every change outside its state directory is noted first (ci/restore.sh), and
# ci/slurm-down.sh undoes them all; if this script fails, it runs
# ci/slurm-down.sh itself, so that a failed start leaves the machine as it was.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
STATE_DIR=${SLURM_CI_STATE_DIR:-/var/spool/slurm-ci}
LOG_DIR=${SLURM_CI_LOG_DIR:-/var/log/slurm-ci}
CLUSTER=${SLURM_CI_CLUSTER:-spsaci}
PARTITION=${SLURM_CI_PARTITION:-ci}
TIMEOUT=${SLURM_CI_TIMEOUT:-60}
ROOT=${SLURM_CI_ROOT:-}        # prefix of the system paths below (tests only)
SBIN=${SLURM_CI_SBIN:-/usr/sbin}
CONF_DIR=$ROOT/etc/slurm
CONF=$CONF_DIR/slurm.conf
KEY=$ROOT/etc/munge/munge.key
MUNGE_RUN=$ROOT/run/munge
POLICY=$ROOT/usr/sbin/policy-rc.d
PIDS=$STATE_DIR/pids          # "<daemon> <pid>" for each daemon this script started
CTLD_SPOOL=$STATE_DIR/slurmctld
D_SPOOL=$STATE_DIR/slurmd
MUNGE_PID=$STATE_DIR/munge/munged.pid
MARKER="# written by spsa-bench ci/slurm-up.sh"

t0=$SECONDS
log() { printf 'slurm-up: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root"

# shellcheck source=ci/restore.sh
. "$HERE/restore.sh"
own_policy=0
on_exit() {
    local rc=$?
    ((own_policy)) && rm -f "$POLICY"
    if ((rc != 0)); then
        log "failed: stopping what this run started and restoring what it changed"
        bash "$HERE/slurm-down.sh" || log "ERROR: restoring failed; see $RESTORE"
    fi
    exit "$rc"
}
trap on_exit EXIT
start_record

# ---------------------------------------------------------------- packages
PKGS=(slurmctld slurmd slurm-client munge)
missing=()
for p in "${PKGS[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ $status == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    # Keep the packages' maintainer scripts from starting services through
    # init scripts: this script starts the daemons itself and tracks their PIDs.
    if [[ ! -e $POLICY ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$POLICY"
        chmod 755 "$POLICY"
        own_policy=1
    fi
    export DEBIAN_FRONTEND=noninteractive
    installed() { dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | awk '$1 == "ii" {print $2}' | sort; }
    before=$(installed)
    note_packages "${missing[@]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${PKGS[@]}" >/dev/null
    # every package apt installed, dependencies included, is purged again by slurm-down.sh
    mapfile -t added < <(comm -13 <(echo "$before") <(installed))
    ((${#added[@]} == 0)) || note_packages "${added[@]}"
    if ((own_policy)); then
        rm -f "$POLICY"
        own_policy=0
    fi
fi

for u in munge slurm; do
    id "$u" >/dev/null 2>&1 || die "user '$u' missing after package install"
done

# ---------------------------------------------------------------- helpers
# alive NAME PID: PID is a live (not zombie) process whose command name is NAME.
alive() {
    local stat
    [[ ${2:-} =~ ^[0-9]+$ ]] || return 1
    stat=$(cat "/proc/$2/stat" 2>/dev/null) || return 1
    # /proc/PID/stat is "PID (COMM) STATE ..."; an exited process whose parent
    # has not reaped it (state Z) counts as stopped.
    [[ $stat == "$2 ($1) "* && ${stat#"$2 ($1) "} != Z* ]]
}
# recorded NAME: the PID this script recorded for NAME, if that process still runs.
recorded() {
    local name pid
    [[ -f $PIDS ]] || return 1
    while read -r name pid; do
        if [[ $name == "$1" ]] && alive "$1" "$pid"; then
            echo "$pid"
            return 0
        fi
    done <"$PIDS"
    return 1
}
record() {
    # keep live entries for other daemons, replace the entry for this one
    local tmp=$PIDS.tmp name pid
    : >"$tmp"
    if [[ -f $PIDS ]]; then
        while read -r name pid; do
            [[ $name == "$1" ]] && continue
            alive "$name" "$pid" && echo "$name $pid" >>"$tmp"
        done <"$PIDS"
    fi
    echo "$1 $2" >>"$tmp"
    mv "$tmp" "$PIDS"
}
# wait_pidfile NAME FILE: wait until FILE names a live NAME process; print the PID.
wait_pidfile() {
    local i pid
    for ((i = 0; i < 100; i++)); do
        if [[ -s $2 ]]; then
            pid=$(tr -dc '0-9' <"$2")
            if alive "$1" "$pid"; then
                echo "$pid"
                return 0
            fi
        fi
        sleep 0.1
    done
    return 1
}
show_logs() {
    local f
    for f in "$LOG_DIR"/slurmd.log "$LOG_DIR"/slurmctld/slurmctld.log "$LOG_DIR"/munge/munged.log; do
        [[ -f $f ]] || continue
        log "--- tail $f"
        tail -n 15 "$f" >&2 || true
    done
}

# ---------------------------------------------------------------- directories
# /run/munge holds munged's socket (the clients' default path); PID files go
# under $STATE_DIR, not /run.
# Each daemon gets directories owned by the user it runs as: munged refuses
# a log or PID file whose directory another non-root user owns, and slurmctld
# (running as slurm) wants its log directory writable.
mkdir -p "$STATE_DIR/munge" "$CTLD_SPOOL" "$D_SPOOL"
make_dir "$CONF_DIR" "$MUNGE_RUN" "$LOG_DIR" "$LOG_DIR/munge" "$LOG_DIR/slurmctld"
note_attrs "$MUNGE_RUN" # an existing /run/munge (a system munged's) gets its owner and mode back
chown root:root "$STATE_DIR" "$LOG_DIR"
chown munge:munge "$STATE_DIR/munge" "$MUNGE_RUN" "$LOG_DIR/munge"
chown slurm:slurm "$CTLD_SPOOL" "$LOG_DIR/slurmctld"
chmod 755 "$STATE_DIR" "$STATE_DIR/munge" "$MUNGE_RUN" "$CTLD_SPOOL" "$D_SPOOL" \
    "$LOG_DIR" "$LOG_DIR/munge" "$LOG_DIR/slurmctld"

# ---------------------------------------------------------------- munge key
note_file "$KEY"
if [[ ! -s $KEY ]]; then
    log "creating $KEY"
    make_dir "$(dirname "$KEY")"
    if command -v mungekey >/dev/null; then
        mungekey --create --keyfile="$KEY" --force
    else
        dd if=/dev/urandom of="$KEY" bs=1024 count=1 status=none
    fi
fi
chown munge:munge "$KEY"
chmod 400 "$KEY"

# ---------------------------------------------------------------- slurm.conf
NODE=$(hostname -s)
hw=$(slurmd -C | head -n 1)       # "NodeName=... CPUs=.. Boards=.. ... RealMemory=.."
getf() { sed -n "s/.*[[:space:]]$1=\([0-9]*\).*/\1/p" <<<" $hw"; }
CPUS=$(getf CPUs)
MEM=$(getf RealMemory)
[[ -n $CPUS && -n $MEM ]] || die "could not parse 'slurmd -C' output: $hw"
node_hw=""
for k in CPUs Boards SocketsPerBoard CoresPerSocket ThreadsPerCore RealMemory; do
    v=$(getf "$k")
    [[ -n $v ]] && node_hw+=" $k=$v"
done
# Memory a job gets per allocated CPU when it asks for none; without it a job
# with no memory request is given the whole node and jobs run one at a time.
DEFMEM=$((MEM / CPUS))
((DEFMEM > 1024)) && DEFMEM=1024

new_conf=$(
    cat <<EOF
$MARKER
# One node, one partition, no accounting database. Regenerated on every run.
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
SwitchType=switch/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$DEFMEM
ReturnToService=2
# Finished jobs stay visible to squeue this long (status checks and the
# end-of-run checks of tests/e2e/test_slurm_workflow.py rely on it; a loaded
# machine runs the test workflow for more than 5 minutes).
MinJobAge=3600
InactiveLimit=0
KillWait=10
Waittime=0
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$CTLD_SPOOL
SlurmdSpoolDir=$D_SPOOL
SlurmctldPidFile=$CTLD_SPOOL/slurmctld.pid
SlurmdPidFile=$D_SPOOL/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=$NODE NodeAddr=127.0.0.1$node_hw State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
)
conf_changed=0
if [[ ! -f $CONF ]] || [[ $(cat "$CONF") != "$new_conf" ]]; then
    note_file "$CONF"
    printf '%s\n' "$new_conf" >"$CONF"
    conf_changed=1
fi

# ---------------------------------------------------------------- daemons
started=()

if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    : # a munged (ours from an earlier run, or the system's) already answers
else
    rm -f "$MUNGE_PID"
    runuser -u munge -- "$SBIN/munged" --pid-file="$MUNGE_PID" --log-file="$LOG_DIR/munge/munged.log"
    pid=$(wait_pidfile munged "$MUNGE_PID") || { show_logs; die "munged did not start"; }
    record munged "$pid"
    started+=(munged)
fi

if scontrol ping 2>/dev/null | grep -q 'is UP'; then
    if ((conf_changed)); then
        log "slurm.conf changed: scontrol reconfigure"
        scontrol reconfigure || true
    fi
else
    rm -f "$CTLD_SPOOL/slurmctld.pid"
    "$SBIN/slurmctld"
    pid=$(wait_pidfile slurmctld "$CTLD_SPOOL/slurmctld.pid") || { show_logs; die "slurmctld did not start"; }
    record slurmctld "$pid"
    started+=(slurmctld)
fi

if pid=$(recorded slurmd) || { [[ -s $D_SPOOL/slurmd.pid ]] && alive slurmd "$(tr -dc '0-9' <"$D_SPOOL/slurmd.pid")"; }; then
    : # slurmd already running
else
    rm -f "$D_SPOOL/slurmd.pid"
    "$SBIN/slurmd" -N "$NODE"
    pid=$(wait_pidfile slurmd "$D_SPOOL/slurmd.pid") || { show_logs; die "slurmd did not start"; }
    record slurmd "$pid"
    started+=(slurmd)
fi

# ---------------------------------------------------------------- wait for the node
state=""
resumed=0
deadline=$((SECONDS + TIMEOUT))
while ((SECONDS < deadline)); do
    state=$(sinfo -h -N -n "$NODE" -o %t 2>/dev/null | head -n 1 || true)
    case $state in
    idle | mix | alloc) break ;;
    drain* | down | drng)
        # left drained/down by an earlier run (e.g. killed slurmd): put it back once
        if ((!resumed)); then
            scontrol update NodeName="$NODE" State=RESUME 2>/dev/null || true
            resumed=1
        fi
        ;;
    esac
    sleep 0.5
done
case $state in
idle | mix | alloc) ;;
*)
    show_logs
    die "node $NODE not ready after ${TIMEOUT}s (sinfo state: '${state:-none}')"
    ;;
esac

printf 'slurm-up: cluster=%s node=%s cpus=%s mem=%sMB partition=%s state=%s started=[%s] in %ss\n' \
    "$CLUSTER" "$NODE" "$CPUS" "$MEM" "$PARTITION" "$state" "${started[*]}" "$((SECONDS - t0))"
