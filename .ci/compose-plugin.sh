# Docker Compose v2 as a CLI plugin. testcontainers runs `docker compose` (v2 only);
# Debian bookworm has only v1, but trixie's docker-compose package (v2) needs
# only a libc bookworm has. Its .deb is fetched with a private apt configuration
# (own source list, lists and cache under $CI_WORK); the system's apt state is
# left untouched. The mirror is the one the system's own sources use.

ci_ensure_compose_plugin() {
  if docker compose version >/dev/null 2>&1; then
    ci_log "$(docker compose version)"
    return
  fi
  local plugins="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins"
  local apt="$CI_WORK/apt-trixie" mirror keyring signed=""
  mirror="$(ci_debian_mirror)"
  [[ -n $mirror ]] || ci_die "cannot find this system's Debian mirror in /etc/apt/sources.list{,.d/}"
  keyring="$(ci_debian_keyring)"
  [[ -n $keyring ]] && signed="[signed-by=$keyring] "
  rm -rf "$apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/deb" "$apt/root"
  echo "deb ${signed}${mirror} trixie main" >"$apt/sources.list"
  local opts=(
    -o "Dir::Etc::SourceList=$apt/sources.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$apt/lists"
    -o "Dir::Cache=$apt/cache"
    -o "APT::Sandbox::User=root"
  )
  ci_log "fetching docker-compose from trixie ($mirror)"
  apt-get "${opts[@]}" update -qq || ci_die "apt-get update of the private trixie source failed"
  (cd "$apt/deb" && apt-get "${opts[@]}" download -qq docker-compose/trixie) ||
    ci_die "apt-get download docker-compose/trixie failed"
  dpkg-deb -x "$apt"/deb/docker-compose_*.deb "$apt/root"
  install -D -m 0755 "$apt/root/usr/libexec/docker/cli-plugins/docker-compose" "$plugins/docker-compose"
  rm -rf "$apt"
  docker compose version >/dev/null 2>&1 || ci_die "docker compose still fails after installing $plugins/docker-compose"
  ci_log "$(docker compose version) at $plugins/docker-compose"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -Eeuo pipefail
  source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
  ci_ensure_compose_plugin
fi
