# Debian packages the tests need: promtool and Alertmanager for the observability
# tests and the stand-in images, the Docker engine, debootstrap for the base image,
# wrk for the HTTP benchmark's own test, openssl for the certificates the TLS and HTTPS suites make,
# redis-server for the connection-churn suite's Redis half.
# Installs only what is missing, so a warm run skips apt entirely.

CI_APT_PACKAGES=(prometheus prometheus-alertmanager docker.io debootstrap wrk openssl redis-server)

ci_pkg_installed() {
  [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]
}

ci_ensure_apt_packages() {
  local missing=() p
  for p in "${CI_APT_PACKAGES[@]}"; do
    ci_pkg_installed "$p" || missing+=("$p")
  done
  if (( ${#missing[@]} == 0 )); then
    ci_log "installed already: ${CI_APT_PACKAGES[*]}"
    return
  fi
  ci_log "installing: ${missing[*]}"
  # Package scripts must not start prometheus or alertmanager as system services
  # (they would hold ports 9090/9093); a policy-rc.d that says no, only if none exists.
  local policy=/usr/sbin/policy-rc.d added_policy=
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && added_policy=1
  fi
  local rc=0
  {
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  } || rc=$?
  [[ -n $added_policy ]] && rm -f "$policy"
  (( rc == 0 )) || ci_die "apt-get failed for: ${missing[*]}"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -Eeuo pipefail
  source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
  ci_ensure_apt_packages
fi
