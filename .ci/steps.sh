# Step timing for the CI scripts (sourced): `step NAME` ends the step running and starts NAME, printing the
# ended step's duration; at exit, whether the script succeeds or fails, a table of every step's duration
# (a failed step is marked so).
_step_names=()
_step_seconds=()
_step_name=""
_step_start=$SECONDS

_end_step() {
  if [ -n "$_step_name" ]; then
    local took=$((SECONDS - _step_start))
    _step_names+=("$_step_name")
    _step_seconds+=("$took")
    printf '== step done: %s, %d min %02d s\n' "$_step_name" $((took / 60)) $((took % 60))
    _step_name=""
  fi
}

step() {
  _end_step
  _step_name="$1"
  _step_start=$SECONDS
  printf '== step: %s\n' "$1"
}

steps_done() {
  _end_step
  local i total=0
  printf '\n| step | duration |\n|---|---|\n'
  for i in "${!_step_names[@]}"; do
    printf '| %s | %d min %02d s |\n' "${_step_names[$i]}" $((_step_seconds[i] / 60)) $((_step_seconds[i] % 60))
    total=$((total + _step_seconds[i]))
  done
  printf '| total | %d min %02d s |\n' $((total / 60)) $((total % 60))
}

_on_exit() {
  local status=$?
  if [ "$status" -ne 0 ] && [ -n "$_step_name" ]; then
    _step_name="$_step_name (failed, exit $status)"
  fi
  steps_done
  exit "$status"
}
trap _on_exit EXIT
