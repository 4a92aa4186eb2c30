#!/usr/bin/env bash
# Stop the SLURM daemons that ci/slurm-up.sh started, by the PIDs it recorded,
# then undo every change it made to the machine (ci/restore.sh): the packages
# it installed are purged, the files it replaced (slurm.conf) put back, the
# files and directories it created removed. Daemons it did not start are never
# touched. Quiet and successful when there is nothing to do.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
STATE_DIR=${SLURM_CI_STATE_DIR:-/var/spool/slurm-ci}
PIDS=$STATE_DIR/pids
WAIT=${SLURM_CI_STOP_TIMEOUT:-30}
# shellcheck source=ci/restore.sh
. "$HERE/restore.sh"

# alive NAME PID: PID is a live process whose command name is NAME (guards
# against a recorded PID that has since been reused by another program).
alive() {
    local stat
    [[ ${2:-} =~ ^[0-9]+$ ]] || return 1
    stat=$(cat "/proc/$2/stat" 2>/dev/null) || return 1
    # /proc/PID/stat is "PID (COMM) STATE ..."; an exited process whose parent
    # has not reaped it (state Z) counts as stopped.
    [[ $stat == "$2 ($1) "* && ${stat#"$2 ($1) "} != Z* ]]
}

# stop_daemons: stop every daemon in the record $PIDS, then remove the record.
stop_daemons() {
    local -A pid_of=()
    local name pid i
    while read -r name pid; do
        [[ -n ${name:-} && ${pid:-} =~ ^[0-9]+$ ]] && pid_of[$name]=$pid
    done <"$PIDS"
    # Compute nodes first, then the controller, then the authentication daemon
    # both of them talk to.
    for name in slurmd slurmctld munged; do
        pid=${pid_of[$name]:-}
        alive "$name" "$pid" || continue
        kill -TERM "$pid" 2>/dev/null || continue
        for ((i = 0; i < WAIT * 10; i++)); do
            alive "$name" "$pid" || break
            sleep 0.1
        done
        if alive "$name" "$pid"; then
            echo "slurm-down: $name ($pid) ignored SIGTERM for ${WAIT}s, sending SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.5
        fi
        if alive "$name" "$pid"; then
            echo "slurm-down: could not stop $name ($pid)" >&2
            return 1
        fi
    done
    rm -f "$PIDS"
}

if [[ -f $PIDS ]]; then
    stop_daemons
fi
restore_changes || {
    echo "slurm-down: could not restore everything ci/slurm-up.sh changed; see $RESTORE" >&2
    exit 1
}
