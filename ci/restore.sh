# Sourced by ci/slurm-up.sh and ci/slurm-down.sh: every change the up script makes
# outside its own state directory is noted here before it is made, and
# restore_changes undoes them all. Needs STATE_DIR set.
#
# The record $STATE_DIR/restore has one line per change, in the order made:
#   saved PATH       PATH existed; its copy (mode, owner, times kept) is $BACKUP_DIR/PATH
#   absent PATH      PATH did not exist (a file the up script created)
#   made-dir PATH    the directory PATH did not exist
#   attrs UID:GID MODE PATH   the owner and mode of the existing directory PATH
#   package NAME     the Debian package NAME was not installed
# Only the first note of a PATH counts, so running the up script again never
# takes its own slurm.conf for the original.

RESTORE=$STATE_DIR/restore
BACKUP_DIR=$STATE_DIR/backup

# noted PATH: PATH already has a line in the record.
noted() {
    [[ -f $RESTORE ]] && awk -v p="$1" '$NF == p {found = 1} END {exit !found}' "$RESTORE"
}

# start_record: create the state directory (noting it, and any parent created
# with it, for removal at the very end) and the record.
start_record() {
    local path=$STATE_DIR missing=()
    while [[ ! -e $path ]]; do
        missing=("$path" "${missing[@]}")
        path=$(dirname "$path")
    done
    mkdir -p "$STATE_DIR"
    touch "$RESTORE"
    for path in "${missing[@]}"; do
        noted "$path" || echo "made-dir $path" >>"$RESTORE"
    done
}

# holds_state PATH: PATH is the state directory or one of its parents.
holds_state() {
    [[ $STATE_DIR == "$1" || $STATE_DIR == "$1"/* ]]
}

# note_file PATH: remember PATH (a copy, or that it is absent) before changing it.
note_file() {
    noted "$1" && return 0
    if [[ -e $1 ]]; then
        mkdir -p "$BACKUP_DIR$(dirname "$1")"
        cp -p "$1" "$BACKUP_DIR$1"
        echo "saved $1" >>"$RESTORE"
    else
        echo "absent $1" >>"$RESTORE"
    fi
}

# note_attrs PATH: remember the owner and mode of the existing directory PATH.
note_attrs() {
    noted "$1" && return 0
    echo "attrs $(stat -c '%u:%g %a' "$1") $1" >>"$RESTORE"
}

# make_dir PATH...: mkdir -p, noting every directory it creates.
make_dir() {
    local path missing
    for path in "$@"; do
        missing=()
        while [[ ! -e $path ]]; do
            missing=("$path" "${missing[@]}")
            path=$(dirname "$path")
        done
        for path in "${missing[@]}"; do
            mkdir "$path"
            noted "$path" || echo "made-dir $path" >>"$RESTORE"
        done
    done
}

# note_packages NAME...: remember packages installed (or about to be) that were not.
note_packages() {
    local name
    for name in "$@"; do
        noted "$name" || echo "package $name" >>"$RESTORE"
    done
}

# restore_changes: purge the packages the up script installed (each package apt
# installed, dependencies included), then undo every other change, newest first,
# and remove the record, the state directory last if the up script made it.
# Returns non-zero (keeping the record) if something could not be restored.
restore_changes() {
    [[ -f $RESTORE ]] || return 0
    local lines=() kind path packages=() failed=0 i owner mode
    mapfile -t lines <"$RESTORE"
    for ((i = 0; i < ${#lines[@]}; i++)); do
        read -r kind path <<<"${lines[i]}"
        [[ $kind == package ]] && packages+=("$path")
    done
    if ((${#packages[@]})); then
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${packages[@]}" >/dev/null ||
            failed=1
    fi
    for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
        read -r kind path <<<"${lines[i]}"
        case $kind in
        saved)
            mkdir -p "$(dirname "$path")"
            rm -rf "$path"
            cp -p "$BACKUP_DIR$path" "$path" || failed=1
            ;;
        absent) rm -f "$path" || failed=1 ;;
        attrs)
            read -r kind owner mode path <<<"${lines[i]}"
            chown "$owner" "$path" && chmod "$mode" "$path" || failed=1
            ;;
        made-dir) holds_state "$path" || rm -rf "$path" || failed=1 ;;
        esac
    done
    ((failed)) && return 1
    rm -rf "$BACKUP_DIR" "$RESTORE"
    for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
        read -r kind path <<<"${lines[i]}"
        if [[ $kind == made-dir ]] && holds_state "$path"; then
            rm -rf "$path"
        fi
    done
    return 0
}
