#!/usr/bin/env bash
# Start a one-node SLURM cluster on 127.0.0.1: munged, slurmctld and slurmd (Debian's slurm-wlm + munge).
# Needs root. Installs the two packages with apt-get when they are missing (SLURM_INSTALL=0 turns that off).
# Daemon PIDs go to $SLURM_RUN_DIR/*.pid; tests/slurm/stop_cluster.sh stops exactly those PIDs.
# Exit codes: 0 ready, 2 not root, 3 cannot install slurm/munge, 4 a foreign /etc/slurm/slurm.conf exists,
# 5 a test cluster is already running, 1 anything else (the daemon logs are printed).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RUN_DIR=${SLURM_RUN_DIR:-/tmp/rmexplain-slurm}
# What the node advertises (slurm.conf.in: config_overrides); enough for workflow/profiles/slurm's requests.
CPUS=${SLURM_TEST_CPUS:-16}
MEM_MB=${SLURM_TEST_MEM_MB:-131072}
GPUS=${SLURM_TEST_GPUS:-4}  # fake GPUs, see gres.conf.in
CTLD_PORT=${SLURM_CTLD_PORT:-6817}
SLURMD_PORT=${SLURM_SLURMD_PORT:-6818}
# The SLURM plugin's job step drops SLURM_CONF from the environment: the config must be at the default path.
CONF_DIR=/etc/slurm
MARKER="rmexplain-test-cluster"

exec 3>&2  # messages from inside wait_for's silenced polls
die() { echo "start_cluster.sh: $2" >&3; exit "$1"; }

[ "$(id -u)" -eq 0 ] || die 2 "needs root (it starts slurmctld/slurmd and writes $CONF_DIR)"

install_packages() {
    command -v slurmctld >/dev/null && command -v munged >/dev/null && return 0
    [ "${SLURM_INSTALL:-1}" = 1 ] || die 3 "slurmctld/munged missing and SLURM_INSTALL=0"
    command -v apt-get >/dev/null || die 3 "slurmctld/munged missing and no apt-get to install them"
    echo "installing slurm-wlm and munge with apt-get" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        slurm-wlm munge; } >"$RUN_DIR/apt.log" 2>&1 ||
        { tail -20 "$RUN_DIR/apt.log" >&2; die 3 "apt-get failed"; }
}

render() {  # render TEMPLATE DEST: fill the @NAME@ placeholders
    sed -e "s|@NODE@|$(hostname -s)|g" -e "s|@CPUS@|$CPUS|g" -e "s|@MEM_MB@|$MEM_MB|g" \
        -e "s|@GPUS@|$GPUS|g" -e "s|@GPU_MAX@|$((GPUS - 1))|g" -e "s|@RUN_DIR@|$RUN_DIR|g" \
        -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@SLURMD_PORT@|$SLURMD_PORT|g" "$1" >"$2"
}

refuse_if_running() {  # a test cluster rendered from another RUN_DIR may still be up
    local pid_file pid
    [ -e "$CONF_DIR/slurm.conf" ] || return 0
    pid_file=$(sed -n 's/^SlurmctldPidFile=//p' "$CONF_DIR/slurm.conf")
    pid=$(cat "$pid_file" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        die 5 "a test cluster is running (slurmctld pid $pid, $pid_file): stop it with stop_cluster.sh"
    fi
}

write_config() {
    mkdir -p "$CONF_DIR"
    local name
    for name in slurm.conf gres.conf cgroup.conf; do
        if [ -e "$CONF_DIR/$name" ] && ! grep -q "$MARKER" "$CONF_DIR/$name"; then
            die 4 "$CONF_DIR/$name exists and was not written by this script; refusing to overwrite it"
        fi
    done
    for name in slurm.conf gres.conf cgroup.conf; do
        render "$HERE/$name.in" "$CONF_DIR/$name"
    done
}

start_munge() {
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        echo "reusing the running munged" >&2
        return 0
    fi
    [ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key && chmod 600 /etc/munge/munge.key
    mkdir -p /run/munge /var/lib/munge /var/log/munge
    chown munge:munge /run/munge /var/lib/munge /var/log/munge
    rm -f /run/munge/munged.pid
    runuser -u munge -- munged --pid-file=/run/munge/munged.pid --log-file=/var/log/munge/munged.log \
        </dev/null >>"$RUN_DIR/daemons.out" 2>&1 3>&-
    # munged writes its pid file as the munge user; keep a copy next to the others for stop_cluster.sh.
    wait_for "munged" 20 test -s /run/munge/munged.pid
    cp /run/munge/munged.pid "$RUN_DIR/munged.pid"
    wait_for "munge credentials" 20 sh -c 'munge -n | unmunge >/dev/null'
}

wait_for() {  # wait_for WHAT SECONDS CMD...: poll CMD every 0.5 s
    local what=$1 seconds=$2
    shift 2
    local deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        if [ $SECONDS -ge $deadline ]; then
            echo "start_cluster.sh: timed out after ${seconds}s waiting for $what" >&2
            tail -n 30 "$RUN_DIR"/*.log "$RUN_DIR/daemons.out" >&2 2>/dev/null || true
            exit 1
        fi
        sleep 0.5
    done
}

make_fake_gpus() {  # character-device clones of /dev/null that gres.conf lists as GPUs
    local i
    for ((i = 0; i < GPUS; i++)); do
        [ -c "$RUN_DIR/gpu$i" ] || mknod "$RUN_DIR/gpu$i" c 1 3
    done
}

node_idle() {  # true once the node is idle; stops the wait at once when slurmctld rejected it
    local state
    state=$(sinfo -h -N -o %T | sort -u | tr '\n' ' ' | sed 's/ $//')  # one line per partition
    case "$state" in
        idle) return 0 ;;
        *inval* | *drain*) scontrol show node >&3; die 1 "slurmctld rejected the node (state $state)" ;;
        *) return 1 ;;
    esac
}

cleanup_on_error() {  # a half-started cluster is stopped by the same PIDs stop_cluster.sh uses
    local rc=$?
    if [ $rc -ne 0 ] && { [ $rc -lt 2 ] || [ $rc -gt 5 ]; }; then  # 2-5: refused before starting anything
        SLURM_RUN_DIR=$RUN_DIR "$HERE/stop_cluster.sh"
    fi
    exit $rc
}

# The daemons must not inherit this script's stdout/stderr (nor fd 3): a caller reading them (subprocess.run
# with capture_output) would wait for the daemons to exit. Their own logs go to $RUN_DIR/*.log.
main() {
    mkdir -p "$RUN_DIR/state" "$RUN_DIR/spool"
    trap cleanup_on_error EXIT
    [ "$GPUS" -ge 1 ] || die 1 "SLURM_TEST_GPUS must be >= 1"
    install_packages
    refuse_if_running
    make_fake_gpus
    write_config
    start_munge
    # -c: start from a clean state, without jobs of an earlier test cluster in the same RUN_DIR.
    slurmctld -c </dev/null >>"$RUN_DIR/daemons.out" 2>&1 3>&-
    wait_for "slurmctld" 30 scontrol ping
    slurmd </dev/null >>"$RUN_DIR/daemons.out" 2>&1 3>&-
    wait_for "the node to become idle" 60 node_idle
    echo "SLURM one-node cluster ready on 127.0.0.1: node $(hostname -s) advertising $CPUS CPUs," \
        "$MEM_MB MB and $GPUS fake GPUs; partitions cpu (default) and gpu; PIDs in $RUN_DIR" >&2
}

main "$@"
