# A reachable Docker engine for the container tests. Reuses a running engine;
# otherwise starts one dockerd and remembers its PID so that only that one is
# stopped afterwards (ci_stop_started_docker_engine, called from .ci/run's EXIT trap).
#
# --iptables=false: this kind of machine has no working NAT for the bridge; builds
# that need the network use the host network instead (deploy/compose.ci.yml).
# Never --bridge=none: a second engine started that way deletes the shared docker0.

CI_DOCKERD_PID=""

ci_docker_ready() { docker info >/dev/null 2>&1; }

ci_wait_for_docker() {
  local seconds="$1" i
  for (( i = 0; i < seconds * 4; i++ )); do
    ci_docker_ready && return 0
    if [[ -n $CI_DOCKERD_PID ]] && ! kill -0 "$CI_DOCKERD_PID" 2>/dev/null; then
      return 1
    fi
    sleep 0.25
  done
  return 1
}

ci_ensure_docker_engine() {
  if ci_docker_ready; then
    ci_log "engine reachable already: $(docker version --format 'server {{.Server.Version}}' 2>/dev/null)"
    return
  fi
  command -v dockerd >/dev/null || ci_die "dockerd not found (package docker.io)"
  if pgrep -x dockerd >/dev/null; then
    ci_log "a dockerd is running but not answering yet; waiting for it"
    ci_wait_for_docker 60 || ci_die "the running dockerd did not answer 'docker info' within 60 s"
    return
  fi
  mkdir -p "$CI_WORK"
  local log="$CI_WORK/dockerd.log"
  dockerd --iptables=false </dev/null >"$log" 2>&1 &
  CI_DOCKERD_PID=$!
  ci_log "started dockerd (pid $CI_DOCKERD_PID, log $log)"
  if ! ci_wait_for_docker 60; then
    tail -n 30 "$log" >&2 || true
    ci_die "dockerd did not become ready within 60 s"
  fi
  ci_log "engine ready: $(docker version --format 'server {{.Server.Version}}' 2>/dev/null)"
}

ci_stop_started_docker_engine() {
  [[ -n $CI_DOCKERD_PID ]] || return 0
  local pid="$CI_DOCKERD_PID" i
  CI_DOCKERD_PID=""
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  # dockerd stops its containers first; give it a bounded time, then insist.
  for (( i = 0; i < 120; i++ )); do
    kill -0 "$pid" 2>/dev/null || { ci_log "stopped the dockerd this run started (pid $pid)"; return 0; }
    sleep 0.25
  done
  kill -KILL "$pid" 2>/dev/null || true
  ci_log "killed the dockerd this run started (pid $pid): it did not stop within 30 s"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -Eeuo pipefail
  source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
  ci_ensure_docker_engine
  ci_log "standalone run: this dockerd keeps running (pid ${CI_DOCKERD_PID:-n/a})"
fi
