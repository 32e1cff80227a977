# Docker Compose v2 as a CLI plugin. testcontainers runs `docker compose` (v2 only);
# Debian bookworm has only v1, but trixie's docker-compose package (v2) needs
# only a libc bookworm has (ci_extract_trixie_deb in lib.sh fetches it).

ci_ensure_compose_plugin() {
  if docker compose version >/dev/null 2>&1; then
    ci_log "$(docker compose version)"
    return
  fi
  local plugins="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins" root="$CI_WORK/docker-compose-deb"
  ci_extract_trixie_deb docker-compose "$root"
  install -D -m 0755 "$root/usr/libexec/docker/cli-plugins/docker-compose" "$plugins/docker-compose"
  rm -rf "$root"
  docker compose version >/dev/null 2>&1 || ci_die "docker compose still fails after installing $plugins/docker-compose"
  ci_log "$(docker compose version) at $plugins/docker-compose"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -Eeuo pipefail
  source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
  ci_ensure_compose_plugin
fi
