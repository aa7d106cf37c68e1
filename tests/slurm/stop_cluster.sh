#!/usr/bin/env bash
# Stop the daemons started by tests/slurm/start_cluster.sh, by the PIDs it recorded in $SLURM_RUN_DIR,
# and remove the config files it rendered into /etc/slurm. A munged it reused (not started) is left alone.
set -uo pipefail

RUN_DIR=${SLURM_RUN_DIR:-/tmp/rmexplain-slurm}
CONF_DIR=/etc/slurm
MARKER="rmexplain-test-cluster"

stop_pid_file() {  # stop_pid_file NAME: SIGTERM the recorded PID, SIGKILL it after 10 s
    local file="$RUN_DIR/$1.pid" pid
    [ -s "$file" ] || return 0
    pid=$(cat "$file")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        if kill -0 "$pid" 2>/dev/null; then
            echo "stop_cluster.sh: $1 (pid $pid) ignored SIGTERM; sending SIGKILL" >&2
            kill -KILL "$pid"
        fi
    fi
    rm -f "$file"
}

# slurmd first, so that it does not try to reach a stopped slurmctld; munged last.
for daemon in slurmd slurmctld munged; do
    stop_pid_file "$daemon"
done
rm -f "$RUN_DIR"/gpu[0-9]*
for name in slurm.conf gres.conf cgroup.conf; do
    if [ -e "$CONF_DIR/$name" ] && grep -q "$MARKER" "$CONF_DIR/$name"; then
        rm -f "$CONF_DIR/$name"
    fi
done
