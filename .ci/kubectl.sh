# kubectl, for its built-in kustomize: the Kubernetes suites render the overlays of
# deploy/kubernetes with `kubectl kustomize` (no cluster is contacted). They need
# kustomize 5; bookworm's kubernetes-client is 1.20 (kustomize 2), trixie's kubectl
# package (1.32, kustomize 5.5) needs only a libc bookworm has: its binary goes to
# /usr/local/bin, ahead of any older kubectl on PATH.

CI_KUBECTL="${CI_KUBECTL:-/usr/local/bin/kubectl}"

# The major version of the kustomize built into the kubectl on PATH, or 0.
ci_kustomize_major() {
  local v
  v="$(kubectl version --client -o json 2>/dev/null | sed -n 's/.*"kustomizeVersion": *"v\{0,1\}\([0-9]*\).*/\1/p')"
  echo "${v:-0}"
}

ci_ensure_kubectl() {
  if (( $(ci_kustomize_major) >= 5 )); then
    ci_log "$(kubectl version --client 2>/dev/null | tr '\n' ' ')"
    return
  fi
  local root="$CI_WORK/kubectl-deb"
  rm -rf "$root"
  ci_extract_trixie_deb kubectl "$root"
  install -D -m 0755 "$root/usr/bin/kubectl" "$CI_KUBECTL"
  rm -rf "$root"
  hash -r
  (( $(ci_kustomize_major) >= 5 )) || ci_die "kubectl on PATH still lacks kustomize 5 after installing $CI_KUBECTL"
  ci_log "$(kubectl version --client 2>/dev/null | tr '\n' ' ')at $CI_KUBECTL"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -Eeuo pipefail
  source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
  ci_ensure_kubectl
fi
